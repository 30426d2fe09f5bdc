// A real OpenID provider for the single sign-on spec: the OpenID Certified `oidc-provider`
// package on a loopback port, with one static confidential client and the accounts the spec
// passes in. Its development interactions (a login form that takes any password, then a consent
// page) stand in for a company's sign-in pages.
//
// Environment: OIDC_PORT, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI, OIDC_ROLE_CLAIM,
// OIDC_ACCOUNTS_FILE (a JSON file: account id → claims, read again at every sign-in, so a
// spec can change what the provider vouches for). Prints `ready <issuer>` once it listens.
import { readFileSync } from 'node:fs';

import Provider from 'oidc-provider';

function required(name) {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}

const port = Number(required('OIDC_PORT'));
const roleClaim = required('OIDC_ROLE_CLAIM');
const accountsFile = required('OIDC_ACCOUNTS_FILE');
const accounts = () => JSON.parse(readFileSync(accountsFile, 'utf8'));
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: required('OIDC_CLIENT_ID'),
      client_secret: required('OIDC_CLIENT_SECRET'),
      redirect_uris: [required('OIDC_REDIRECT_URI')],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  // Countersign always sends a PKCE challenge; make the provider insist on one.
  pkce: { required: () => true },
  claims: {
    openid: ['sub', roleClaim],
    profile: ['preferred_username', 'name'],
    email: ['email', 'email_verified'],
  },
  // Put the person's claims in the ID token itself (Countersign reads the ID token only).
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['countersign-e2e-oidc-cookie-key'] },
  async findAccount(_ctx, id) {
    if (accounts()[id] === undefined) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, ...accounts()[id] }) };
  },
});

const server = provider.listen(port, '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
