// "Edit, then approve": a reviewer lowers the amount of a proposed refund on its page and
// approves the edited request. The agent sees exactly what changed, the executor receives the
// edited value, and the page shows the change. (Its refusals and the trail's keyed hashes are
// tested over HTTP, tests/api/edits.rs.)
import { randomUUID } from 'node:crypto';

import { expect, login, test } from './fixtures';

test.describe('edit, then approve', () => {
  test('a reviewer lowers the amount and approves the edited request', async ({ page, api, server }) => {
    const domain = `e2e-${randomUUID().slice(0, 8)}`;
    const proposal = await api.proposeOk(server.agentToken, {
      domain,
      compliance_context: { gdpr: false, hipaa: false },
      parameters: { account: 'acct-7', amount: 500 },
    });

    await login(page, server.reviewer);
    await page.goto(`/proposals/${proposal.id}`);
    await page.getByTestId('edit').locator('summary').click();
    await expect(page.getByTestId('edit-amount')).toHaveValue('500');
    await page.getByTestId('edit-amount').fill('200');
    await page.getByTestId('edit-approve').click();
    await expect(page.getByTestId('proposal-status')).toHaveText('approved');
    const edited = page.getByTestId('proposal-edited');
    await expect(edited).toContainText('/amount');
    await expect(edited).toContainText('200');

    const seen = await api.getProposal(server.agentToken, proposal.id);
    expect(seen.body?.proposal.review).toMatchObject({
      decision: 'approved',
      edited: [{ field: '/amount', old: 500, new: 200 }],
    });
  });
});
