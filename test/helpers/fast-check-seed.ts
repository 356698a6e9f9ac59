import fc from 'fast-check';

// `make test` is reproducible: property tests draw from one fixed seed unless FC_SEED names another.
// `make soak` (SOAK=1) draws fresh seeds, which is where new counterexamples are hunted.
const fixed = process.env.FC_SEED ?? (process.env.SOAK ? undefined : '20261122');
if (fixed !== undefined) fc.configureGlobal({ seed: Number(fixed) });
