// The layer rules of src/ (docs/architecture.md), checked by `npm run lint` (so by .ci/run):
// `depcruise src --config .dependency-cruiser.cjs`. Type-only imports count as imports.

/** The GraphQL transport: its folder, and the resolvers living beside their services. */
const GRAPHQL = ['^src/graphql/', '\\.resolver\\.ts$'];
/** Everything that speaks HTTP or GraphQL: the transports, their HTTP helpers, and their libraries. */
const TRANSPORTS = [
  ...GRAPHQL,
  '^src/rest/',
  '^src/http/',
  '(^|/)node_modules/fastify/',
  '(^|/)node_modules/@fastify/',
  '(^|/)node_modules/@apollo/',
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'rest-not-into-graphql',
      comment: 'The transports are siblings: the REST shim uses the services, never the GraphQL transport.',
      severity: 'error',
      from: { path: '^src/rest/' },
      to: { path: GRAPHQL },
    },
    {
      name: 'graphql-not-into-rest',
      comment: 'The transports are siblings: GraphQL (src/graphql and the resolvers) never uses the REST shim.',
      severity: 'error',
      from: { path: GRAPHQL },
      to: { path: '^src/rest/' },
    },
    {
      name: 'below-the-transports',
      comment:
        'The services, their queries, errors and what they share (src/trainers, creatures, auth, events, common, db; ' +
        'errors, error-mapping, services.ts) reach into neither transport. Resolvers beside them belong to GraphQL.',
      severity: 'error',
      from: {
        path: ['^src/(trainers|creatures|auth|events|common|db)/', '^src/(errors|error-mapping|services)\\.ts$'],
        pathNot: '\\.resolver\\.ts$',
      },
      to: { path: [...GRAPHQL, '^src/rest/'] },
    },
    {
      name: 'services-know-no-transport',
      comment:
        'Services, their queries and what they share (src/common, src/db) know no transport: ' +
        'not src/rest, src/graphql, src/http, the resolvers, Fastify or Apollo.',
      severity: 'error',
      from: { path: ['\\.service\\.ts$', '\\.queries\\.ts$', '^src/common/', '^src/db/'] },
      to: { path: TRANSPORTS },
    },
    {
      name: 'migrations-self-contained',
      comment: 'Migrations are frozen: they import TypeORM and each other, nothing else of src/.',
      severity: 'error',
      from: { path: '^src/db/migrations/' },
      to: { path: '^src/', pathNot: '^src/db/migrations/' },
    },
    {
      name: 'no-circular',
      comment:
        'No module reaches itself through its imports (type-only ones count): each layer and each pair of modules ' + 'depends one way.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
