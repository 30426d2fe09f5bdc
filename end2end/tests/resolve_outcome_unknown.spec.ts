// A reviewer settles a command whose outcome is unknown (its executor failed saying something
// may have happened) and approves the rollback task it opened; the rollback is then queued as
// its own command, linked to the first.
import { expect, login, test } from './fixtures';

test.describe('resolve an unknown outcome', () => {
  test('reviewer marks it failed, then approves its rollback task', async ({ page, api, server }) => {
    const { id } = await api.proposeOk(server.agentToken, {
      rollback_plan: { type: 'compensate', instructions: { step: 'restore the previous email' } },
    });
    await login(page, server.reviewer);
    await page.goto(`/proposals/${id}`);
    await page.getByTestId('approve').click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();

    const lease = await api.mustLeaseCommandFor(server.executorToken, id);
    const failed = await api.fail(server.executorToken, lease.command.id, lease.lease_token, {
      code: 'e2e_timeout',
      message: 'the CRM did not answer',
    });
    expect(failed.status).toBe(200);
    expect((await api.getProposal(server.agentToken, id)).body?.proposal.status).toBe('outcome_unknown');

    await page.goto('/runs');
    const run = page.locator(`[data-testid="unknown-run"][data-command-id="${lease.command.id}"]`);
    await expect(run).toBeVisible();
    await expect(run.getByTestId('run-status')).toHaveText('outcome_unknown');
    await run.getByTestId('resolve-reason').fill('Checked the CRM: the email was not changed.');
    await run.getByTestId('resolve-failed').click();
    await expect(page.getByTestId('flash-notice')).toContainText('Settled');
    await expect(page.locator(`[data-testid="unknown-run"][data-command-id="${lease.command.id}"]`)).toHaveCount(0);
    expect((await api.getProposal(server.agentToken, id)).body?.proposal.status).toBe('failed');

    const task = page.getByTestId('rollback-task').filter({ hasText: lease.command.id });
    await expect(task).toHaveCount(1);
    await expect(task.getByTestId('rollback-instructions')).toContainText('restore the previous email');
    await task.getByTestId('rollback-approve').click();
    await expect(page.getByTestId('flash-notice')).toContainText('Rollback approved');

    // The rollback is its own command, for the same proposal, linked to the first.
    const rollback = await api.mustLeaseCommandFor(server.executorToken, id);
    const command = rollback.command as unknown as { kind: string; rollback_of: string; id: string };
    expect(command.kind).toBe('rollback');
    expect(command.rollback_of).toBe(lease.command.id);
    const done = await api.complete(server.executorToken, command.id, rollback.lease_token, { undone: true });
    expect(done.status).toBe(200);
  });
});
