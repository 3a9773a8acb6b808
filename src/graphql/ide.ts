import type { ApolloServerPlugin } from '@apollo/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/*
 * The development IDE at GET /graphql (on when GRAPHQL_SANDBOX is). The page tries Apollo Sandbox
 * from Apollo's CDN; when that script cannot be loaded (offline, blocked) it moves on within a
 * few seconds, without a click, to GraphiQL served from this service's own files under
 * /graphql/ide. Each page's Content-Security-Policy allows exactly what the page loads: no inline
 * script or style, so the scripts below are served as files.
 */

const SANDBOX_SCRIPT = 'https://embeddable-sandbox.cdn.apollographql.com/_latest/embeddable-sandbox.umd.production.min.js';
const SANDBOX_FRAME = 'https://sandbox.embed.apollographql.com';
/** How long the page waits for Apollo's CDN before it opens the local IDE instead. */
export const SANDBOX_WAIT_MS = 3000;
export const IDE_PATH = '/graphql/ide';

const COMMON_POLICY = ["default-src 'none'", "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"];

/** The landing page: its own script and style, Apollo's embed script, Sandbox's frame, and GraphQL requests to this origin. */
const LANDING_CSP = [
  ...COMMON_POLICY,
  `script-src 'self' ${new URL(SANDBOX_SCRIPT).origin}`,
  "style-src 'self'",
  'img-src data:',
  "connect-src 'self'",
  `frame-src ${SANDBOX_FRAME}`,
].join('; ');

/**
 * GraphiQL from local files. Its dialogs insert a <style> element at run time (the scroll lock of
 * react-remove-scroll), which carries the page's nonce (it reads `__webpack_nonce__`, set by
 * ide.js from the page's meta tag); its stylesheet embeds fonts and icons as data: URLs.
 */
const ideCsp = (nonce: string): string =>
  [
    ...COMMON_POLICY,
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    'font-src data:',
    'img-src data:',
    "connect-src 'self'",
  ].join('; ');

const page = (title: string, head: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="data:,">
${head}
</head>
<body>
${body}
</body>
</html>
`;

const LANDING_HTML = page(
  'Creature registry: GraphQL',
  `<link rel="stylesheet" href="${IDE_PATH}/landing.css">
<script src="${IDE_PATH}/landing.js" defer></script>`,
  `<p class="bar">Loading Apollo Sandbox&hellip; Offline? <a href="${IDE_PATH}">Open the built-in GraphiQL</a>.</p>
<div id="sandbox"></div>`,
);

const LANDING_CSS = `html, body { margin: 0; height: 100%; font-family: system-ui, sans-serif; }
.bar { margin: 0; padding: 4px 8px; font-size: 12px; background: #f4f4f5; height: 16px; line-height: 16px; }
#sandbox { position: absolute; top: 24px; bottom: 0; left: 0; right: 0; }
#sandbox iframe { width: 100%; height: 100%; border: none; background: white; }
`;

const LANDING_JS = `(function () {
  var done = false;
  function offline() {
    if (done) return;
    done = true;
    location.replace(${JSON.stringify(IDE_PATH)} + location.search);
  }
  var timer = setTimeout(offline, ${SANDBOX_WAIT_MS});
  var script = document.createElement('script');
  script.src = ${JSON.stringify(SANDBOX_SCRIPT)};
  script.onerror = offline;
  script.onload = function () {
    if (done) return;
    if (typeof window.EmbeddedSandbox !== 'function') return offline();
    done = true;
    clearTimeout(timer);
    new window.EmbeddedSandbox({
      target: '#sandbox',
      initialEndpoint: location.origin + '/graphql',
      includeCookies: false,
      hideCookieToggle: false,
      allowDynamicStyles: false,
      runTelemetry: false,
    });
  };
  document.head.appendChild(script);
})();
`;

const ideHtml = (nonce: string) =>
  page(
    'Creature registry: GraphiQL',
    `<meta name="style-nonce" content="${nonce}">
<link rel="stylesheet" href="${IDE_PATH}/graphiql.css">
<link rel="stylesheet" href="${IDE_PATH}/ide.css">
<script src="${IDE_PATH}/react.js" defer></script>
<script src="${IDE_PATH}/react-dom.js" defer></script>
<script src="${IDE_PATH}/graphiql.js" defer></script>
<script src="${IDE_PATH}/graphql-ws.js" defer></script>
<script src="${IDE_PATH}/ide.js" defer></script>`,
    '<div id="graphiql">Loading GraphiQL&hellip;</div>',
  );

const IDE_CSS = `html, body { margin: 0; height: 100%; }
#graphiql { height: 100vh; }
`;

const DEFAULT_QUERY = `# GraphiQL, served by this service (works offline).
# Operations other than registerTrainer and authenticate need a token:
# add it in the Headers tab below as {"Authorization": "Bearer <token>"}.
# Subscriptions (creatureEvents) run over WebSocket with that same token.

query Hello {
  __typename
}
`;

const IDE_JS = `(function () {
  window.__webpack_nonce__ = document.querySelector('meta[name="style-nonce"]').content;
  var params = new URLSearchParams(location.search);
  var http = GraphiQL.createFetcher({ url: location.origin + '/graphql' });
  function isSubscription(document, name) {
    var operations = ((document && document.definitions) || []).filter(function (d) { return d.kind === 'OperationDefinition'; });
    var operation = operations.filter(function (d) { return !name || (d.name && d.name.value === name); })[0];
    return Boolean(operation) && operation.operation === 'subscription';
  }
  // Subscriptions go over GraphQL over WebSocket, one socket each, whose connection_init
  // carries the Authorization header of the Headers tab (the server reads the token there).
  function fetcher(request, options) {
    if (!isSubscription(options && options.documentAST, request.operationName)) return http(request, options);
    var headers = (options && options.headers) || {};
    var authorization = headers.Authorization || headers.authorization;
    var client = graphqlWs.createClient({
      url: location.origin.replace(/^http/, 'ws') + '/graphql',
      connectionParams: authorization ? { authorization: authorization } : {},
      retryAttempts: 0,
    });
    var events = client.iterate(request);
    var end = events.return.bind(events);
    events.return = function () {
      return end().finally(function () { client.dispose(); });
    };
    return events;
  }
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));
  root.render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: params.get('query') || ${JSON.stringify(DEFAULT_QUERY)},
      defaultEditorToolsVisibility: true,
    }),
  );
})();
`;

interface Asset {
  readonly type: string;
  readonly csp?: string;
  load(): Promise<string | Buffer>;
}

const text = (value: string) => async () => value;
/** A file of an installed package (by its folder: these packages do not export their browser builds). */
const file = (pkg: string, path: string) => () => readFile(join(dirname(require.resolve(`${pkg}/package.json`)), path));
const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

const ASSETS: Record<string, Asset> = {
  'landing.js': { type: JS, load: text(LANDING_JS) },
  'landing.css': { type: CSS, load: text(LANDING_CSS) },
  'ide.js': { type: JS, load: text(IDE_JS) },
  'ide.css': { type: CSS, load: text(IDE_CSS) },
  'react.js': { type: JS, load: file('react', 'umd/react.production.min.js') },
  'react-dom.js': { type: JS, load: file('react-dom', 'umd/react-dom.production.min.js') },
  'graphiql.js': { type: JS, load: file('graphiql', 'graphiql.min.js') },
  'graphiql.css': { type: CSS, load: file('graphiql', 'graphiql.min.css') },
  'graphql-ws.js': { type: JS, load: file('graphql-ws', 'umd/graphql-ws.min.js') },
};

/** Apollo serves this page for a browser's GET /graphql (Accept: text/html); landingPageCsp gives it its policy. */
export function landingPagePlugin(): ApolloServerPlugin {
  return {
    async serverWillStart() {
      return {
        async renderLandingPage() {
          return { html: LANDING_HTML };
        },
      };
    },
  };
}

/** An onSend hook for /graphql's scope: the landing page (the only HTML there) gets LANDING_CSP. */
export const landingPageCsp = async (_request: FastifyRequest, reply: FastifyReply) => {
  const type = reply.getHeader('content-type');
  if (typeof type === 'string' && type.startsWith('text/html')) reply.header('content-security-policy', LANDING_CSP);
};

/** The local IDE page and the files both pages load, read from the installed packages once, on first use. */
export function registerIdeRoutes(app: FastifyInstance): void {
  const loaded = new Map<string, Promise<string | Buffer>>();
  app.get(IDE_PATH, { schema: { hide: true } }, async (_request, reply) => {
    const nonce = randomBytes(16).toString('base64');
    return reply
      .header('content-security-policy', ideCsp(nonce))
      .header('cache-control', 'no-store')
      .type('text/html; charset=utf-8')
      .send(ideHtml(nonce));
  });
  app.get<{ Params: { name: string } }>(`${IDE_PATH}/:name`, { schema: { hide: true } }, async (request, reply) => {
    const asset = Object.hasOwn(ASSETS, request.params.name) ? ASSETS[request.params.name] : undefined;
    if (!asset) return reply.callNotFound();
    let body = loaded.get(request.params.name);
    if (!body) {
      body = asset.load();
      loaded.set(request.params.name, body);
    }
    return reply
      .type(asset.type)
      .header('cache-control', 'public, max-age=3600')
      .send(await body);
  });
}
