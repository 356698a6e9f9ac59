#!/usr/bin/env node
import { loadProgram, requireNode } from './preflight.js';

requireNode('sim');
await loadProgram('sim', new URL('../dist/simulator/cli.js', import.meta.url));
