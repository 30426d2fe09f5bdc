// A reviewer rejects an agent's proposal with a reason; the agent learns why, and nothing reaches
// the executor.
import { expect, login, openQueue, queueRow, test } from './fixtures';

test.describe('reject a proposal', () => {
  test('reviewer rejects with a reason; agent sees it; the executor gets nothing', async ({ page, api, server }) => {
    const { id, input } = await api.proposeOk(server.agentToken);
    const reason = `Ticket not verified with the customer (e2e ${id.slice(0, 8)})`;

    await login(page, server.reviewer);
    await openQueue(page);
    await queueRow(page, id).getByRole('link', { name: input.intent.summary }).click();
    await expect(page).toHaveURL(`/proposals/${id}`);
    await expect(page.getByTestId('proposal-status')).toHaveText('pending');

    await page.locator('form.reject textarea[name=reason]').fill(reason);
    await page.locator('button[data-testid=reject]').click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    await expect(page.getByTestId('proposal-status')).toHaveText('rejected');

    await openQueue(page);
    await expect(queueRow(page, id)).toHaveCount(0);

    const seen = await api.getProposal(server.agentToken, id);
    expect(seen.status).toBe(200);
    expect(seen.body?.proposal).toMatchObject({
      id,
      status: 'rejected',
      review: { decision: 'rejected', decided_by: server.reviewer.username, reason },
    });

    // Earlier tests on this worker's server may have left approved commands queued, so drain the
    // queue (bounded) and check that none of it came from this proposal; then it must be empty.
    const drained = await api.drainCommands(server.executorToken);
    expect(drained.map((lease) => lease.command.proposal_id)).not.toContain(id);
    const after = await api.lease(server.executorToken);
    expect(after.status).toBe(204);
  });
});
