#!/usr/bin/env node
import '../dist/gateway/cli.js';
