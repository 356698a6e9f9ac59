/** The example configurations shipped in examples/ (the simulator's own examples excluded). */
export const EXAMPLE_FILES = [
  'examples/quickstart/config.yaml',
  'examples/pools/config.yaml',
  'examples/strict/config.yaml',
  'examples/reasoning/config.yaml',
  'examples/envelope/gateway-config.yaml',
];
