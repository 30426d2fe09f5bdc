// Approving a high-risk, wide-reaching action asks the reviewer to type the target's name, as
// GitHub does before deleting a repository; the server refuses a wrong name.
import { expect, login, test } from './fixtures';

test.describe('confirm a risky approval', () => {
  test('a wrong name is refused and nothing is approved; the right one approves', async ({ page, api, server }) => {
    const target = `prod-billing-${Date.now()}`;
    const { id } = await api.proposeOk(server.agentToken, {
      risk_level: 'high',
      blast_radius: 'large',
      target_refs: [{ type: 'database', id: target }],
      compliance_context: { gdpr: false, hipaa: false },
    });

    await login(page, server.reviewer);
    await page.goto(`/proposals/${id}`);
    await expect(page.getByTestId('confirm-name')).toHaveText(target);
    // Risk is said in words, not only in colour.
    await expect(page.getByTestId('proposal-risk')).toHaveText('high');

    await page.getByTestId('confirm-input').fill(target.slice(0, -1));
    await page.locator('button[data-testid=approve]').click();
    await expect(page.getByTestId('flash-error')).toContainText("not the target's name");
    await expect(page.getByTestId('proposal-status')).toHaveText('pending');
    expect((await api.getProposal(server.agentToken, id)).body?.proposal.status).toBe('pending');

    await page.getByTestId('confirm-input').fill(target);
    await page.locator('button[data-testid=approve]').click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    await expect(page.getByTestId('proposal-status')).toHaveText('approved');

    // Leave the executor queue clean for later specs.
    const lease = await api.mustLeaseCommandFor(server.executorToken, id);
    expect((await api.complete(server.executorToken, lease.command.id, lease.lease_token, { ok: true })).status).toBe(
      200,
    );
  });
});
