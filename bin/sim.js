#!/usr/bin/env node
import { requireNode } from './check-node.js';

requireNode('sim');
// Loaded only once the version is known to be enough (a static import would load it first).
await import('../dist/simulator/cli.js');
