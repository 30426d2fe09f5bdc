// "Approve and allow similar": a reviewer approves a proposal and, on the same page, lets the
// same agent's later calls with these parameters through for an hour, with one field freed and
// one bounded. A later call inside the grant is accepted at once, naming the grant; one outside
// it waits for a person. The grants page lists it, and revoking it there stops it at once.
// (Each refusal the server makes is tested over HTTP, tests/api/grants.rs.)
import { randomUUID } from 'node:crypto';

import { expect, login, test } from './fixtures';

const GRANTABLE = {
  risk_level: 'medium' as const,
  blast_radius: 'small' as const,
  compliance_context: { gdpr: false, hipaa: false },
  target_refs: [],
};

test.describe('standing grants', () => {
  test('approve and allow similar, then revoke', async ({ page, api, server }) => {
    const domain = `e2e-${randomUUID().slice(0, 8)}`;
    const parameters = { account: 'acct-7', amount: 120, memo: 'invoice 17' };
    const first = await api.proposeOk(server.agentToken, { ...GRANTABLE, domain, parameters });

    await login(page, server.reviewer);
    await page.goto(`/proposals/${first.id}`);
    const grant = page.getByTestId('grant');
    await grant.locator('summary').click();
    // The narrowest grant is the default: exact parameters, one hour, no freed field.
    await expect(page.getByTestId('grant-duration')).toHaveValue('3600');
    await expect(page.getByTestId('grant-free-memo')).not.toBeChecked();
    await page.getByTestId('grant-free-memo').check();
    await page.getByTestId('grant-bound-amount').fill('500');
    await page.getByTestId('grant-uses').fill('5');
    await page.getByTestId('approve-grant').click();
    await expect(page.getByTestId('proposal-status')).toHaveText('approved');
    await expect(page.locator('.flash')).toContainText('similar calls are allowed');

    // Inside the grant: accepted at once, and the agent sees which rule let it through.
    const similar = await api.propose(server.agentToken, {
      ...GRANTABLE,
      domain,
      parameters: { ...parameters, amount: 450, memo: 'invoice 18' },
    });
    expect(similar.status).toBe(201);
    expect(similar.body?.proposal.status).toBe('accepted');
    const rule = String((similar.body?.proposal.routing as { rule: string }).rule);
    expect(rule).toMatch(/^grant:/);
    // Outside it (another account): a person decides.
    const other = await api.propose(server.agentToken, {
      ...GRANTABLE,
      domain,
      parameters: { ...parameters, account: 'acct-8' },
    });
    expect(other.body?.proposal.status).toBe('pending');

    // The granted proposal's page links to its grant; the grants page lists it.
    await page.goto(`/proposals/${similar.body?.proposal.id}`);
    await page.getByTestId('proposal-grant').click();
    await expect(page).toHaveURL(/\/grants#grant-/);
    const row = page.locator(`[data-grant-id="${rule.slice('grant:'.length)}"]`);
    await expect(row.getByTestId('grant-uses')).toHaveText('1 of 5');
    await expect(row.getByTestId('grant-scope')).toContainText('memo (any value)');
    await expect(row.getByTestId('grant-by')).toContainText(server.reviewer.username);

    await row.getByTestId('grant-revoke').click();
    await expect(page.locator('.flash')).toContainText('Revoked');
    await expect(page.getByTestId('grants-ended').locator(`[data-grant-id="${rule.slice(6)}"]`)).toContainText('revoked');
    const after = await api.propose(server.agentToken, {
      ...GRANTABLE,
      domain,
      parameters: { ...parameters, memo: 'invoice 19' },
    });
    expect(after.body?.proposal.status).toBe('pending');
  });
});
