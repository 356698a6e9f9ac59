#!/usr/bin/env node
import { loadProgram, requireNode } from './preflight.js';

requireNode('gateway');
await loadProgram('gateway', new URL('../dist/gateway/cli.js', import.meta.url));
