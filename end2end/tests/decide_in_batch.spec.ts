// A reviewer decides several proposals at once from the queue: chooses rows with the mouse and
// with `x`, approves them together, and the queue says which were decided and which were not
// (one that must be approved on its own page). A row another reviewer decides meanwhile leaves
// the live queue, and the choices made survive it (the server's own re-check of a stale row is
// tested over HTTP, tests/api/batch.rs). Then a batch rejection with one reason reaches the
// agent.
import { randomUUID } from 'node:crypto';

import { expect, login, newSession, queueRow, test } from './fixtures';

const QUIET = {
  risk_level: 'low' as const,
  blast_radius: 'small' as const,
  compliance_context: { gdpr: false, hipaa: false },
};

test.describe('decide in a batch', () => {
  test('approve the chosen rows; the risky one is named, not decided', async ({
    page,
    browser,
    api,
    server,
  }) => {
    const domain = `e2e-${randomUUID().slice(0, 8)}`;
    const first = await api.proposeOk(server.agentToken, { ...QUIET, domain });
    const second = await api.proposeOk(server.agentToken, { ...QUIET, domain });
    const stale = await api.proposeOk(server.agentToken, { ...QUIET, domain });
    const risky = await api.proposeOk(server.agentToken, { ...QUIET, domain, risk_level: 'high' });

    await login(page, server.reviewer);
    await page.goto(`/?domain=${domain}&sort=oldest`);
    await expect(page.getByTestId('queue-keys')).toHaveAttribute('data-ready', '1');
    await expect(queueRow(page, risky.id).getByTestId('queue-own-page')).toBeVisible();

    // The mouse chooses two rows; the keyboard chooses the third (`j` moves, `x` chooses).
    await queueRow(page, first.id).getByTestId('queue-select').check();
    await queueRow(page, risky.id).getByTestId('queue-select').check();
    // The keys work from a checkbox too (it takes no typing).
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('x');
    await expect(queueRow(page, second.id).getByTestId('queue-select')).toBeChecked();
    await page.keyboard.press('j');
    await page.keyboard.press('x');
    await expect(queueRow(page, stale.id).getByTestId('queue-select')).toBeChecked();

    // Meanwhile another reviewer rejects one of them on its page.
    const other = await newSession(browser, server);
    try {
      await login(other.page, server.reviewer2);
      await other.page.goto(`/proposals/${stale.id}`);
      await other.page.locator('form.reject textarea[name=reason]').fill('already handled by hand');
      await other.page.locator('button[data-testid=reject]').click();
      await expect(other.page.getByTestId('proposal-status')).toHaveText('rejected');
    } finally {
      await other.context.close();
    }
    await expect(queueRow(page, stale.id)).toHaveCount(0);
    for (const id of [first.id, second.id, risky.id]) {
      await expect(queueRow(page, id).getByTestId('queue-select')).toBeChecked();
    }

    await page.getByTestId('batch-approve').click();
    const report = page.getByTestId('batch-report');
    await expect(report).toContainText('Approved 2 proposals.');
    const refused = page.getByTestId('batch-refused');
    await expect(refused.locator('li')).toHaveCount(1);
    await expect(refused.locator(`li[data-proposal-id="${risky.id}"]`)).toHaveAttribute('data-reason', 'not_batchable');
    for (const id of [first.id, second.id]) {
      const seen = await api.getProposal(server.agentToken, id);
      expect(seen.body?.proposal).toMatchObject({ status: 'approved', authorization_state: 'confirmed' });
    }
    expect((await api.getProposal(server.agentToken, risky.id)).body?.proposal.status).toBe('pending');

    // The risky one can be rejected in a batch, with one reason its agent reads.
    await page.goto(`/?domain=${domain}`);
    await queueRow(page, risky.id).getByTestId('queue-select').check();
    await page.getByTestId('batch-reason').fill('too wide for a Friday');
    await page.getByTestId('batch-reject').click();
    await expect(page.getByTestId('batch-report')).toContainText('Rejected 1 proposal');
    const rejected = await api.getProposal(server.agentToken, risky.id);
    expect(rejected.body?.proposal).toMatchObject({
      status: 'rejected',
      review: { decision: 'rejected', reason: 'too wide for a Friday', decided_by: server.reviewer.username },
    });
  });
});
