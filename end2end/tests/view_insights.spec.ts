// Decision insights: a reviewer's decision shows up in the compliance officer's figures for
// that reviewer and domain, with its chart and table, in every window. (That each figure
// equals a count made from the trail is tested over HTTP, tests/api/insights.rs.)
import { randomUUID } from 'node:crypto';

import { expect, login, newSession, test } from './fixtures';

test.describe('decision insights', () => {
  test('a decision is counted for its reviewer and its domain', async ({ page, browser, api, server }) => {
    const domain = `e2e-${randomUUID().slice(0, 8)}`;
    const proposal = await api.proposeOk(server.agentToken, {
      domain,
      compliance_context: { gdpr: false, hipaa: false },
    });
    const reviewer = await newSession(browser, server);
    try {
      await login(reviewer.page, server.reviewer);
      await reviewer.page.goto(`/proposals/${proposal.id}`);
      await reviewer.page.getByTestId('approve').click();
      await expect(reviewer.page.getByTestId('proposal-status')).toHaveText('approved');
    } finally {
      await reviewer.context.close();
    }

    await login(page, server.auditor);
    await page.goto('/audit');
    await page.getByTestId('nav-insights').click();
    await expect(page).toHaveURL(/\/insights$/);
    await expect(page.getByTestId('insights-reviewer-chart')).toBeVisible();
    const row = page.locator(`[data-testid=insights-domain][data-name="${domain}"]`);
    await expect(row.locator('[data-field=decisions]')).toHaveText('1');
    await expect(row.locator('[data-field=approval]')).toHaveText('100%');
    const mine = page.locator(`[data-testid=insights-reviewer][data-name="${server.reviewer.username}"]`);
    await expect(mine).toHaveCount(1);

    await page.getByTestId('insights-window').getByRole('link', { name: '7 days' }).click();
    await expect(page).toHaveURL(/days=7/);
    await expect(row.locator('[data-field=decisions]')).toHaveText('1');
  });
});
