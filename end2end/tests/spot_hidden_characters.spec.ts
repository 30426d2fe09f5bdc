// A reviewer spots hidden characters wherever the agent's text appears, not only on the
// proposal page: the queue row and the /runs card of a proposal whose intent hides a
// right-to-left override (which would show `…gnp.exe` as `…exe.png`) and whose parameter hides
// a zero-width space show each escaped as ⟦U+…⟧ and carry a flag with the count.
import { randomUUID } from 'node:crypto';

import { expect, login, queueRow, test } from './fixtures';

const INTENT = 'Fix typo in contact name \u202Egnp.exe';

test.describe('spot hidden characters', () => {
  test('the queue and /runs flag them as the proposal page does', async ({ page, api, server }) => {
    // A domain of its own, so what other specs leave in the shared queue stays out of view.
    const domain = `e2e-${randomUUID().slice(0, 8)}`;
    const { id } = await api.proposeOk(server.agentToken, {
      domain,
      intent: { summary: INTENT },
      compliance_context: { gdpr: false, hipaa: false },
      parameters: { contact_id: 'c-123', name: 'Ann\u200Ba' },
    });
    await login(page, server.reviewer);
    await page.goto(`/?domain=${domain}`);

    const row = queueRow(page, id);
    await expect(row).toContainText('Fix typo in contact name ⟦U+202E⟧gnp.exe');
    await expect(row).toContainText('name=Ann⟦U+200B⟧a');
    await expect(row.getByTestId('hidden-flag')).toHaveText(/2 hidden characters/);
    expect(await row.innerText()).not.toContain('\u202E');
    await expect(row.locator('mark.hidden-char').first()).toHaveAttribute('title', /right-to-left override/);

    // Its run, once the executor cannot say whether it happened.
    await page.goto(`/proposals/${id}`);
    await page.getByTestId('approve').click();
    await expect(page.getByTestId('flash-notice')).toBeVisible();
    const lease = await api.mustLeaseCommandFor(server.executorToken, id);
    const failed = await api.fail(server.executorToken, lease.command.id, lease.lease_token, {
      code: 'e2e_timeout',
    });
    expect(failed.status).toBe(200);
    await page.goto('/runs');
    const run = page.locator(`[data-testid="unknown-run"][data-command-id="${lease.command.id}"]`);
    await expect(run.getByTestId('run-summary')).toHaveText('Fix typo in contact name ⟦U+202E⟧gnp.exe');
    await expect(run.getByTestId('hidden-flag')).toHaveText(/2 hidden characters/);
    expect(await run.innerText()).not.toContain('\u202E');
  });
});
