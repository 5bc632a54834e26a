// A real OpenID provider (panva's oidc-provider) for the sign-in tests, on 127.0.0.1 only.
// Its one argument is a JSON file written by tests/servers/oidc_provider.py:
//   { issuer, port, jwks: {keys: [private JWKs]}, clients: [...], resources: {indicator: audience},
//     groups: {subject: [group, ...]} }
// It prints "PORT <n>" once listening. Beside the provider's own endpoints it answers
// GET /test/jwks-hits (how often /jwks was read), so a test can see the resource server's refreshes.
// Token exchange (RFC 8693) is not built into oidc-provider; it is registered here as a grant
// type whose tokens the provider itself issues and signs like every other access token.
import { readFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';
import * as jose from 'jose';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

function indicatorOf(audience) {
  return Object.keys(config.resources).find((key) => config.resources[key] === audience);
}

function resourceServer(indicator) {
  const audience = config.resources[indicator];
  if (!audience) throw new errors.InvalidTarget(`unknown resource ${indicator}`);
  return { scope: 'mcp', audience, accessTokenFormat: 'jwt', accessTokenTTL: config.ttl ?? 600, jwt: { sign: { alg: 'RS256' } } };
}

const provider = new Provider(config.issuer, {
  jwks: config.jwks,
  clients: config.clients,
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub, groups: config.groups[sub] ?? [] }) }),
  claims: { openid: ['sub', 'groups'] },
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => config.defaultResource,
      useGrantedResource: () => true,
      getResourceServerInfo: async (ctx, indicator) => resourceServer(indicator),
    },
  },
  extraTokenClaims: async (ctx, token) => {
    const who = token.accountId ?? token.clientId;
    const extra = { groups: config.groups[who] ?? [] };
    if (token.gty === 'token_exchange' && token.extra?.act) extra.act = token.extra.act;
    return extra;
  },
  ttl: { AccessToken: config.ttl ?? 600, ClientCredentials: config.ttl ?? 600 },
});

// RFC 8693: the calling client (authenticated by the token endpoint) presents a user's access token
// issued here; the answer is a new access token for the requested audience, for the same subject.
async function tokenExchange(ctx) {
  const { client, params } = ctx.oidc;
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest('subject_token_type must be an access token');
  }
  const keys = jose.createLocalJWKSet({ keys: config.jwks.keys.map(({ d, p, q, dp, dq, qi, ...pub }) => pub) });
  let subject;
  try {
    ({ payload: subject } = await jose.jwtVerify(params.subject_token, keys, { issuer: config.issuer }));
  } catch (error) {
    throw new errors.InvalidGrant(`subject_token refused: ${error.code ?? error.message}`);
  }
  const indicator = indicatorOf(params.audience);
  if (!indicator) throw new errors.InvalidTarget(`unknown audience ${params.audience}`);
  const grant = new provider.Grant({ accountId: subject.sub, clientId: client.clientId });
  grant.addResourceScope(indicator, 'mcp');
  const grantId = await grant.save();
  const token = new provider.AccessToken({
    accountId: subject.sub, client, grantId, gty: 'token_exchange', scope: 'mcp',
    extra: { act: { sub: client.clientId } },
  });
  token.resourceServer = { ...resourceServer(indicator), identifier: () => indicator };
  ctx.oidc.entity('AccessToken', token);
  const value = await token.save();
  ctx.body = {
    access_token: value, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer',
    expires_in: token.expiration, scope: 'mcp',
  };
}
provider.registerGrantType(TOKEN_EXCHANGE, tokenExchange, [
  'subject_token', 'subject_token_type', 'audience', 'resource', 'requested_token_type', 'scope',
]);

// Client credentials may name the resource server by its `audience` (as Auth0 and others take
// it); oidc-provider knows only RFC 8707's `resource`, so the request is read here and handed on.
async function audienceAsResource(ctx) {
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  const form = new URLSearchParams(Buffer.concat(chunks).toString());
  const indicator = form.get('grant_type') === 'client_credentials' && indicatorOf(form.get('audience'));
  if (indicator) { form.delete('audience'); form.set('resource', indicator); }
  ctx.req.body = Object.fromEntries(form);
}

let jwksHits = 0;
provider.use(async (ctx, next) => {
  if (ctx.path === '/test/jwks-hits') { ctx.body = { hits: jwksHits }; return; }
  if (ctx.path === '/jwks') jwksHits += 1;
  if (ctx.path === '/token' && ctx.method === 'POST' && ctx.is('application/x-www-form-urlencoded')) {
    await audienceAsResource(ctx);
  }
  await next();
});

const server = provider.listen(config.port, '127.0.0.1', () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
