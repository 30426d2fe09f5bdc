// A compliance officer reads the whole audit trail: filters live in the query string (a plain GET
// form), pages go back in time without showing an event twice, and the chain's state is shown.
import { randomBytes } from 'node:crypto';

import { expect, login, newSession, test } from './fixtures';

test.describe('filter the audit trail', () => {
  test('a compliance officer filters by tool and kind and pages back through the trail', async ({
    page,
    browser,
    api,
    server,
  }) => {
    // A tool no other test uses, so the filtered trail is exactly what this test seeded.
    const tool = `audit.filter_${randomBytes(4).toString('hex')}`;
    const ids: string[] = [];
    for (let i = 0; i < 55; i++) {
      ids.push((await api.proposeOk(server.agentToken, { tool: { name: tool } })).id);
    }

    await login(page, server.auditor);
    await page.getByTestId('nav-audit').click();
    await expect(page).toHaveURL('/audit');
    await expect(page.getByTestId('audit-head')).toContainText('seq');
    await expect(page.getByTestId('audit-row').first()).toBeVisible();

    // The form is a GET: the filters land in the query string and can be bookmarked.
    const form = page.getByTestId('audit-filters');
    await form.locator('input[name=tool]').fill(tool);
    await form.locator('select[name=kind]').selectOption('proposal.submitted');
    await page.getByTestId('audit-filter').click();
    await expect(page).toHaveURL(new RegExp(`[?&]tool=${tool.replace('.', '\\.')}(&|$)`));
    await expect(page).toHaveURL(/kind=proposal\.submitted/);

    const rows = page.getByTestId('audit-row');
    await expect(rows).toHaveCount(50);
    for (const facet of await rows.locator('.facet-tool').allInnerTexts()) {
      expect(facet).toBe(tool);
    }
    const firstPage = await rows.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-seq'))));
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.screenshot({ path: '/tmp/shots/audit-trail.png' });
    await page.screenshot({ path: '/tmp/shots/audit-trail-full.png', fullPage: true });

    await page.getByTestId('audit-older').first().click();
    await expect(page).toHaveURL(/before=\d+/);
    await expect(rows).toHaveCount(5);
    const secondPage = await rows.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-seq'))));
    const all = [...firstPage, ...secondPage];
    expect(new Set(all).size).toBe(55);
    expect(all).toEqual([...all].sort((a, b) => b - a));
    await expect(page.getByTestId('audit-older')).toHaveCount(0);
    // The filters travel with the cursor, and the form still shows them.
    await expect(form.locator('input[name=tool]')).toHaveValue(tool);

    // A bookmark of the filtered URL shows the same, without JavaScript too.
    const url = page.url();
    const { context: noJs, page: plain } = await newSession(browser, server, {
      javaScriptEnabled: false,
      storageState: await page.context().storageState(),
    });
    await plain.goto(url);
    await expect(plain.getByTestId('audit-row')).toHaveCount(5);
    await noJs.close();

    // Verify now: the chain holds, and the page says how far it checked.
    await page.getByTestId('audit-verify').click();
    await expect(page).toHaveURL('/audit');
    await expect(page.getByTestId('audit-verification')).toContainText('Verified');
    await page.setViewportSize({ width: 1400, height: 1000 });
    await page.screenshot({ path: '/tmp/shots/audit-verified.png' });
    await page.screenshot({ path: '/tmp/shots/audit-verified-full.png', fullPage: true });
  });
});
