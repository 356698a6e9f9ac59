#!/usr/bin/env node
import '../dist/simulator/cli.js';
