// The policy pages in Chromium: admin alice proposes a candidate on /policy and sees its diff,
// its backtest over decisions recorded through the agent API, the "loosens" mark and no approve
// button of her own; the playground routes a pasted pre-tool-check under the active version and
// the candidate; admin bob approves on /policy/changes/:id, and /policy shows the new version
// in force with both versions in its history. An invalid candidate comes back with every error
// and its line. (The same flows over HTTP, with the refusals and the trail:
// tests/api/policy_page.rs; the two policies are tests/api/policy_texts.rs's BEFORE and AFTER.)
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { CountersignApi } from './api';
import { expect, login, newSession, test, watchCsp, type Credentials, type ServerInfo } from './fixtures';
import { REPO_ROOT, serverBinary, startServer, type RunningServer } from './server';

/** In force at start (`serve --policy`): `docs.search` is sales-agent's alone; `search_docs` has no rule. */
const BEFORE = `
[policy]
name = "before"

[defaults]
unknown_agents = "allow"

[tools."docs.search"]
category = "A"
tool_category = "public_read"
risk = "low"
allowed_agents = ["sales-agent"]

[tools."crm.*"]
category = "C"
tool_category = "write"
risk = "medium"
`;

/**
 * The candidate: `docs.search` becomes intruder's alone (sales-agent's accept → refuse,
 * intruder's refuse → accept: it loosens), and `search_docs` needs a human (accept → ask).
 */
const AFTER = `
[policy]
name = "after"

[defaults]
unknown_agents = "allow"

[tools."docs.search"]
category = "A"
tool_category = "public_read"
risk = "low"
allowed_agents = ["intruder"]

[tools."search_docs"]
category = "C"

[tools."crm.*"]
category = "C"
tool_category = "write"
risk = "medium"
`;

/** Two errors, on lines 5 and 6. */
const INVALID = '[policy]\nname = "broken"\n\n[tools."crm.*"]\nrisk = "extreme"\ncategory = "Z"\n';

/** A public read of `search_docs`, as an agent sends it to /api/v1/pre-tool-check. */
const SEARCH_DOCS_CHECK = {
  tool_name: 'search_docs',
  tool_category: 'public_read',
  authorization_state: 'none',
  evidence_refs: [],
  risk_domain: 'research',
  proposed_arguments: { query: 'contract' },
  recommended_route: 'accept',
};

/** Runs the CLI against the running server's database; fails with its own words. */
function cli(server: ServerInfo, args: string[], stdin?: string): string {
  const res = spawnSync(serverBinary(), [...args, '--database-url', server.databaseUrl], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    input: stdin ?? '',
    timeout: 60_000,
  });
  if (res.status !== 0) {
    // Never echo stdin: it holds a password.
    throw new Error(`\`countersign ${args.join(' ')}\` exited with ${res.status}\n${res.stdout}\n${res.stderr}`);
  }
  return res.stdout;
}

/** An admin created with `countersign user add`. */
function addAdmin(server: ServerInfo, username: string): Credentials {
  const password = `Cs1-${randomBytes(15).toString('base64url')}`;
  cli(server, ['user', 'add', '--username', username, '--role', 'admin', '--password-stdin'], `${password}\n`);
  return { username, password };
}

/** An agent token created with `countersign token create --agent`. */
function agentToken(server: ServerInfo, name: string): string {
  const token = cli(server, ['token', 'create', '--agent', name]).trim();
  if (token === '' || /\s/.test(token)) throw new Error(`token create --agent ${name} printed ${JSON.stringify(token)}`);
  return token;
}

/**
 * Decisions for the backtest, under BEFORE: a sales-agent search accepted, an intruder's
 * refused, and a `search_docs` check accepted. AFTER routes all three differently.
 */
async function recordDecisions(server: ServerInfo): Promise<void> {
  const tokens = {
    sales: agentToken(server, 'sales-agent'),
    intruder: agentToken(server, 'intruder'),
    bot: agentToken(server, 'support-bot'),
  };
  const api = new CountersignApi(server.baseURL, { [tokens.sales]: 'sales-agent', [tokens.intruder]: 'intruder' });
  const search = (token: string) =>
    api.propose(token, {
      tool: { name: 'docs.search', version: '2024-01' },
      risk_level: 'low',
      approval_required: false,
      compliance_context: { gdpr: false, hipaa: false },
      parameters: { query: 'refund policy' },
      target_refs: [],
      blast_radius: 'tiny',
    });
  const accepted = await search(tokens.sales);
  expect(accepted.status, accepted.text).toBe(201);
  expect(accepted.body?.proposal.status, 'sales-agent may search under BEFORE').not.toBe('pending');
  const refused = await search(tokens.intruder);
  expect(refused.status, refused.text).toBe(201);

  const res = await fetch(`${server.baseURL}/api/v1/pre-tool-check`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokens.bot}`, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(SEARCH_DOCS_CHECK),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(JSON.parse(text).route).toBe('accept');
}

test.describe('policy pages', () => {
  let countersign: RunningServer | undefined;
  let alice: Credentials;
  let bob: Credentials;

  test.beforeAll(async ({ backend }, workerInfo) => {
    test.setTimeout(180_000);
    const dir = mkdtempSync(path.join(tmpdir(), 'cs-policy-e2e-'));
    const policyFile = path.join(dir, 'policy.toml');
    writeFileSync(policyFile, BEFORE);
    const logFile = path.join(workerInfo.project.outputDir, `server-policy-${workerInfo.project.name}.log`);
    countersign = await startServer(backend, logFile, { args: ['--policy', policyFile] });
    alice = addAdmin(countersign.info, 'alice');
    bob = addAdmin(countersign.info, 'bob');
  });

  test.afterAll(async () => {
    await countersign?.stop();
  });

  test('an invalid candidate shows every error with its line', async ({ browser }) => {
    if (countersign === undefined) throw new Error('the server did not start');
    const { context, page } = await newSession(browser, countersign.info);
    const violations = watchCsp(page);
    try {
      await login(page, alice);
      await page.goto('/policy');
      await page.getByTestId('policy-propose-text').fill(INVALID);
      await page.getByTestId('policy-propose-reason').fill('try');
      await page.getByTestId('policy-propose-submit').click();

      await expect(page).toHaveURL('/policy?error=policy_invalid#propose');
      await expect(page.getByTestId('flash-error')).toContainText('not a valid policy');
      const errors = page.getByTestId('policy-errors').locator('li');
      await expect(errors).toHaveCount(2);
      await expect(errors.nth(0)).toHaveText(/^line 5\b.*risk/);
      await expect(errors.nth(0)).toContainText('extreme');
      await expect(errors.nth(1)).toHaveText(/^line 6\b.*category/);
      // Nothing was stored.
      await expect(page.getByTestId('policy-pending-empty')).toBeVisible();

      // The errors were for that one page.
      await page.reload();
      await expect(page.getByTestId('policy-active-version')).toBeVisible();
      await expect(page.getByTestId('policy-errors')).toHaveCount(0);
      expect(violations, 'Content-Security-Policy violations on the console').toEqual([]);
    } finally {
      await context.close();
    }
  });

  test('one admin proposes a candidate, the playground compares, another admin approves it', async ({ browser }) => {
    if (countersign === undefined) throw new Error('the server did not start');
    const server = countersign.info;
    await recordDecisions(server);

    const proposer = await newSession(browser, server);
    let changePage = '';
    let before = '';
    let candidate = '';
    try {
      const page = proposer.page;
      const violations = watchCsp(page);
      await login(page, alice);

      await test.step('alice proposes AFTER and sees its diff and backtest, but no approve button', async () => {
        await page.getByTestId('nav-policy').click();
        await expect(page).toHaveURL('/policy');
        const active = page.getByTestId('policy-active-version');
        await expect(active).toHaveText(/^sha256:[0-9a-f]+$/);
        before = (await active.textContent()) ?? '';

        await page.getByTestId('policy-propose-text').fill(AFTER);
        await page.getByTestId('policy-propose-reason').fill('intruder lane');
        await page.getByTestId('policy-propose-submit').click();

        await expect(page).toHaveURL(/\/policy\/changes\/[0-9a-f-]{36}\?notice=policy_proposed$/);
        changePage = new URL(page.url()).pathname;
        await expect(page.getByTestId('flash-notice')).toContainText('Another admin must approve it');
        await expect(page.getByTestId('policy-change-status')).toHaveText('pending');
        await expect(page.getByTestId('policy-proposed-by')).toContainText('alice');
        await expect(page.getByTestId('policy-reason')).toHaveText('intruder lane');
        await expect(page.getByTestId('policy-base-version')).toHaveText(before);
        candidate = (await page.getByTestId('policy-candidate-version').textContent()) ?? '';
        expect(candidate).toMatch(/^sha256:[0-9a-f]+$/);
        expect(candidate).not.toBe(before);

        const diff = page.getByTestId('policy-diff');
        await expect(diff.locator('.diff-added').filter({ hasText: 'allowed_agents = ["intruder"]' })).toHaveCount(1);
        await expect(diff.locator('.diff-removed').filter({ hasText: 'allowed_agents = ["sales-agent"]' })).toHaveCount(1);
        await expect(diff.locator('.diff-added').filter({ hasText: '[tools."search_docs"]' })).toHaveCount(1);

        // accept → refuse (sales-agent), refuse → accept (intruder), accept → ask (search_docs).
        await expect(page.getByTestId('policy-backtest-changed')).toHaveText('3');
        await expect(page.getByTestId('policy-transition')).toHaveCount(3);
        await expect(page.locator('[data-testid=policy-transition][data-from=refuse][data-to=accept]')).toHaveCount(1);
        await expect(page.locator('[data-testid=policy-transition][data-from=accept][data-to=refuse]')).toHaveCount(1);
        await expect(page.locator('[data-testid=policy-transition][data-from=accept][data-to=ask]')).toHaveCount(1);
        await expect(page.getByTestId('policy-loosens')).toBeVisible();

        await expect(page.getByTestId('policy-approve')).toHaveCount(0);
        await expect(page.getByTestId('policy-own-change')).toHaveText(
          'You proposed this change: another admin must approve it.',
        );
      });

      await test.step('the playground routes a pasted pre-tool-check under the active version and the candidate', async () => {
        await page.goto('/policy');
        await expect(page.getByTestId('policy-change-link')).toHaveText(candidate);
        await page.getByTestId('policy-playground-input').fill(JSON.stringify(SEARCH_DOCS_CHECK, null, 2));
        await page.getByTestId('policy-playground-candidate').selectOption(candidate);
        await page.getByTestId('policy-playground-submit').click();

        await expect(page).toHaveURL(/\/policy\?input=.*&candidate=sha256/);
        const answer = page.getByTestId('policy-playground-answer');
        await expect(answer.getByTestId('policy-playground-active-route')).toHaveText('accept');
        await expect(answer.getByTestId('policy-playground-candidate-route')).toHaveText('ask');
        await expect(answer).toContainText(before);
        await expect(answer).toContainText(candidate);
        // The form keeps what was pasted.
        await expect(page.getByTestId('policy-playground-input')).toHaveValue(/"tool_name": "search_docs"/);
      });
      expect(violations, 'Content-Security-Policy violations on the console').toEqual([]);
    } finally {
      await proposer.context.close();
    }

    const approver = await newSession(browser, server);
    try {
      const page = approver.page;
      const violations = watchCsp(page);
      await login(page, bob);

      await test.step('bob approves the change', async () => {
        await page.goto(changePage);
        await expect(page.getByTestId('policy-change-status')).toHaveText('pending');
        await expect(page.getByTestId('policy-own-change')).toHaveCount(0);
        await page.getByTestId('policy-answer').locator('form').first().locator('textarea[name=reason]').fill('looks right');
        await page.getByTestId('policy-approve').click();

        await expect(page).toHaveURL(`${changePage}?notice=policy_approved`);
        await expect(page.getByTestId('flash-notice')).toContainText('Approved');
        await expect(page.getByTestId('policy-change-status')).toHaveText('approved');
        await expect(page.getByTestId('policy-decided-by')).toContainText('bob');
        await expect(page.getByTestId('policy-approve')).toHaveCount(0);
      });

      await test.step('/policy shows the candidate in force and both versions in its history', async () => {
        await page.goto('/policy');
        await expect(page.getByTestId('policy-active-version')).toHaveText(candidate);
        await expect(page.getByTestId('policy-active-how')).toHaveText('proposed by one admin, approved by another');
        await expect(page.getByTestId('policy-pending-empty')).toBeVisible();

        // The file's activation at start, then this one.
        const rows = page.getByTestId('policy-history-row');
        await expect(rows).toHaveCount(2);
        const newest = rows.first();
        await expect(newest).toHaveAttribute('data-version', candidate);
        await expect(newest).toContainText('Proposed by alice, approved by bob');
        await expect(newest.getByTestId('policy-history-how')).toHaveText('proposed by one admin, approved by another');
        const file = page.locator(`[data-testid=policy-history-row][data-version="${before}"]`);
        await expect(file).toHaveCount(1);
        await expect(file.getByTestId('policy-history-how')).toHaveText('loaded from the policy file at start');

        // The playground now answers under the new version.
        await page.getByTestId('policy-playground-input').fill(JSON.stringify(SEARCH_DOCS_CHECK));
        await page.getByTestId('policy-playground-submit').click();
        await expect(page.getByTestId('policy-playground-active-route')).toHaveText('ask');
        await expect(page.getByTestId('policy-playground-candidate-route')).toHaveCount(0);
      });
      expect(violations, 'Content-Security-Policy violations on the console').toEqual([]);
    } finally {
      await approver.context.close();
    }
  });
});
