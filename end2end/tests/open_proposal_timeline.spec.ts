// A compliance officer follows one proposal through the trail: submission and routing (with the
// policy version), the approval, the command's lease and report, and the outcome.
import { randomBytes } from 'node:crypto';

import { expect, login, newSession, test } from './fixtures';

test.describe('open a proposal timeline', () => {
  test('from the filtered trail to the story of one proposal', async ({ page, browser, api, server }) => {
    const tool = `audit.timeline_${randomBytes(4).toString('hex')}`;
    const { id } = await api.proposeOk(server.agentToken, { tool: { name: tool } });

    const { context, page: reviewer } = await newSession(browser, server);
    await login(reviewer, server.reviewer);
    await reviewer.goto(`/proposals/${id}`);
    await reviewer.locator('button[data-testid=approve]').click();
    await expect(reviewer.getByTestId('proposal-status')).toHaveText('approved');
    await context.close();
    const lease = await api.mustLeaseCommandFor(server.executorToken, id);
    expect((await api.complete(server.executorToken, lease.command.id, lease.lease_token, { ok: true })).status).toBe(200);

    await login(page, server.auditor);
    await page.goto(`/audit?tool=${tool}&kind=proposal.submitted`);
    const row = page.getByTestId('audit-row');
    await expect(row).toHaveCount(1);
    await row.getByTestId('audit-timeline-link').click();
    await expect(page).toHaveURL(`/audit/proposals/${id}`);

    await expect(page.getByTestId('timeline-status')).toHaveText('succeeded');
    await expect(page.getByTestId('timeline-policy')).toContainText('sha256:');
    await expect(page.getByTestId('timeline-decision')).toContainText(`approved by ${server.reviewer.username}`);
    const kinds = await page
      .getByTestId('audit-row')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-kind')));
    const story = [
      'proposal.submitted',
      'proposal.approved',
      'command.queued',
      'command.leased',
      'command.succeeded',
      'proposal.succeeded',
    ];
    // In order, with the views of the (GDPR) proposal page in between.
    expect(kinds.filter((k) => story.includes(k ?? ''))).toEqual(story);
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.screenshot({ path: '/tmp/shots/audit-timeline.png' });
    await page.screenshot({ path: '/tmp/shots/audit-timeline-full.png', fullPage: true });

    // The proposal page itself: a compliance officer reads it, links back, and cannot decide.
    await page.goto(`/proposals/${id}`);
    await expect(page.getByTestId('proposal-timeline')).toHaveAttribute('href', `/audit/proposals/${id}`);
    await expect(page.getByTestId('trail-row').first()).toBeVisible();
    await expect(page.locator('button[data-testid=approve]')).toHaveCount(0);
    await page.getByTestId('proposal-trail').scrollIntoViewIfNeeded();
    await page.screenshot({ path: '/tmp/shots/proposal-trail.png' });
  });
});
