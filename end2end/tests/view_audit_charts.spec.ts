// A compliance officer sees the decisions of the last 30 days as charts drawn on the server:
// SVG readable without JavaScript, each with its numbers as a table, never a parameter value.
import { randomBytes } from 'node:crypto';

import { expect, login, newSession, test } from './fixtures';

test.describe('view the audit charts', () => {
  test('charts of decisions, queue depth, time to decision, rejected tools and reviewer load', async ({
    page,
    browser,
    api,
    server,
  }) => {
    const tool = `audit.charts_${randomBytes(4).toString('hex')}`;
    const secret = `secret-${randomBytes(4).toString('hex')}@example.com`;
    const { context, page: reviewer } = await newSession(browser, server);
    await login(reviewer, server.reviewer);
    for (const verdict of ['approve', 'reject', 'reject']) {
      const { id } = await api.proposeOk(server.agentToken, {
        tool: { name: tool },
        parameters: { contact_id: 'c-1', email: secret },
      });
      await reviewer.goto(`/proposals/${id}`);
      if (verdict === 'approve') {
        await reviewer.locator('button[data-testid=approve]').click();
      } else {
        await reviewer.locator('form.reject textarea[name=reason]').fill('not needed');
        await reviewer.locator('button[data-testid=reject]').click();
      }
      await expect(reviewer.getByTestId('proposal-decision')).toBeVisible();
    }
    await context.close();

    await login(page, server.auditor);
    await page.goto('/audit');
    await page.getByRole('link', { name: 'Charts' }).click();
    await expect(page).toHaveURL('/audit/charts');
    for (const chart of ['chart-decisions', 'chart-queue', 'chart-latency', 'chart-tools', 'chart-reviewers']) {
      const figure = page.getByTestId(chart);
      await expect(figure).toBeVisible();
      await expect(figure.locator('svg')).toBeVisible();
      await expect(figure.locator('table')).toHaveCount(1);
    }
    const tools = page.getByTestId('chart-tools');
    await tools.locator('summary').click();
    await expect(tools.locator('table')).toContainText(tool);
    await expect(page.getByTestId('chart-reviewers').locator('table')).toContainText(server.reviewer.username);
    await expect(page.locator('body')).not.toContainText(secret);
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.screenshot({ path: '/tmp/shots/audit-charts.png' });
    await page.screenshot({ path: '/tmp/shots/audit-charts-full.png', fullPage: true });

    // Without JavaScript the page is the same server-rendered SVG.
    const { context: noJs, page: plain } = await newSession(browser, server, {
      javaScriptEnabled: false,
      storageState: await page.context().storageState(),
    });
    await plain.goto('/audit/charts');
    await expect(plain.getByTestId('chart-decisions').locator('svg rect').first()).toBeAttached();
    await noJs.close();
  });
});
