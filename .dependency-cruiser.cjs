// The layer rules of docs/architecture.md ("4. Layer rules"), checked on every import of the repository's TypeScript
// (type-only imports included: tsPreCompilationDeps) by `npm run lint:layers`, which `npm run lint` runs.
// A finding names the rule; the rule's comment says why it holds and where the allowed road is.

/** Everything that never runs in production: the sandbox, the tooling, the suites and the scripts. */
const NOT_PRODUCT = '^(packages|tools|test|bench|chaos|explore|scripts|examples)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'No circle, anywhere: a module imports only what is beneath it. Move what both sides need to a third module ' +
        "(as `OID` went to src/evidence/pki.ts and chaos's BatchRun to chaos/bulk-checks.ts).",
      from: {},
      to: { circular: true },
    },
    {
      name: 'product-not-to-tooling',
      severity: 'error',
      comment:
        'src/ is what runs in production: it imports neither the sandbox (packages/sandbox; its control plane and ' +
        "client are the product's, src/client/sandbox-control.ts), nor the tooling (tools/), nor suites or scripts.",
      from: { path: '^src/' },
      to: { path: NOT_PRODUCT },
    },
    {
      name: 'product-not-to-dev-dependencies',
      severity: 'error',
      comment:
        'What runs in production (src/, workflows/, activities/) imports only `dependencies`: the image installs no ' +
        'devDependency (npm ci --omit=dev; docs/decisions/compiled-javascript-in-production.md). Move the package to ' +
        '`dependencies`, or the code out of the product. A type-only import is erased, and tolerated.',
      from: { path: '^(src|workflows|activities)/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'cli-launcher-not-to-dev-dependencies',
      severity: 'error',
      comment:
        'bin/esign.js runs in the image too: it loads tsx only where a checkout has it (to run the source), and nothing ' +
        'else from `devDependencies`.',
      from: { path: '^bin/' },
      to: { dependencyTypes: ['npm-dev'], pathNot: '^node_modules/tsx/' },
    },
    {
      name: 'product-to-workflows-types-only',
      severity: 'error',
      comment:
        'Outside the worker, src/ reaches workflows only through src/definitions/ (names, inputs, results, the ' +
        "workflows' signatures); the worker loads workflows/ by path. A type-only import is tolerated here.",
      from: { path: '^src/' },
      to: { path: '^workflows/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'clients-not-to-workflows',
      severity: 'error',
      comment:
        "Clients, the bridge and the CLI reach workflows only through src/definitions/, not even for a workflow's type " +
        '(src/definitions/ states each signature, e.g. `EvidenceUpkeepWorkflow`).',
      from: { path: '^src/(client|bridge|cli)/' },
      to: { path: '^workflows/' },
    },
    {
      name: 'activities-not-to-workflows',
      severity: 'error',
      comment: 'Activities import nothing from workflows/ (not even types): what both share lives in src/definitions/.',
      from: { path: '^activities/' },
      to: { path: '^workflows/' },
    },
    {
      name: 'activities-not-to-processes',
      severity: 'error',
      comment:
        'Activities take their dependencies from createActivities and import definitions and src/ libraries (client ' +
        'helpers included), never a process (the worker, the bridge, the CLI, the codec endpoint) nor the tooling.',
      from: { path: '^activities/' },
      to: { path: ['^src/(worker|bridge|cli)/', '^src/codec/(main|server)[.]ts$', NOT_PRODUCT] },
    },
    {
      name: 'workflows-to-activities-types-only',
      severity: 'error',
      comment:
        'Workflows import activities as types only (activities/index.ts EsignActivities), and call them through ' +
        "workflows/activity-options.ts: a value import would pull the activities' Node modules into the sandbox.",
      from: { path: '^workflows/' },
      to: { path: '^activities/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'workflows-not-to-processes',
      severity: 'error',
      comment:
        'Workflows run in deterministic isolation: they import src/definitions/, zod-free libraries and types, never ' +
        'the client, the worker, the bridge, the CLI, the packages or the tooling.',
      from: { path: '^workflows/' },
      to: { path: ['^src/(client|worker|bridge|cli)/', NOT_PRODUCT] },
    },
    {
      name: 'client-package-not-to-servers',
      severity: 'error',
      comment:
        'The client package (built from src/client/) is installed by backends: it reaches neither the worker, nor the ' +
        'bridge, nor the activities (their server libraries; test/client/client-package.test.ts checks the packed tarball).',
      from: { path: '^src/client/' },
      to: { path: ['^src/(worker|bridge|cli)/', '^activities/'] },
    },
    {
      name: 'sandbox-not-to-tooling',
      severity: 'error',
      comment:
        'The sandbox package imports the product (its contract, HTTP helpers, the verifying half of the evidence) ' +
        'and its own modules, never the tooling, the suites or the client package.',
      from: { path: '^packages/sandbox/' },
      to: { path: ['^(tools|test|bench|chaos|explore|scripts|examples)/', '^packages/client/'] },
    },
    {
      name: 'tooling-not-to-suites',
      severity: 'error',
      comment:
        'tools/ (the dev stack, the cluster, the launchers) is used by the suites, the benchmarks and the chaos run, ' +
        'so it imports none of them.',
      from: { path: '^tools/' },
      to: { path: '^(test|bench|chaos|explore)/' },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to nothing: a moved or deleted file.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Packages are in the graph, not followed: a rule can see which one a module imports (and whether it is a devDependency).
    exclude: { path: '^(test-artifacts|dist|packages/client/dist|reports|coverage)/|^examples/[^/]+/node_modules/' },
    // Type-only imports are dependencies too: a circle or an upward reach made of types is still one.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json', '.d.ts'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
