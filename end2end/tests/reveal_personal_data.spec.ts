// A reviewer reads a GDPR proposal: personal data stays masked until they reveal it, the reveal
// is in the audit trail for the compliance officer, and secrets never reach the page at all.
import { expect, login, newSession, test } from './fixtures';

test.describe('reveal personal data', () => {
  test('masked until revealed; the reveal is audited; secrets are never shown', async ({
    page,
    browser,
    api,
    server,
  }) => {
    const email = `jane.roe.${Date.now()}@example.com`;
    const secret = 'key_live_0123456789abcdefghij';
    const { id } = await api.proposeOk(server.agentToken, {
      parameters: { contact_id: 'c-123', email, api_key: secret },
      compliance_context: { gdpr: true, hipaa: false },
    });

    await login(page, server.reviewer);
    await page.goto(`/proposals/${id}`);
    const emailRow = page.locator('[data-field="/parameters/email"]');
    const secretRow = page.locator('[data-field="/parameters/api_key"]');
    await expect(emailRow.locator('[data-masked=personal]')).toBeVisible();
    await expect(secretRow.locator('[data-masked=secret]')).toBeVisible();
    // Not on the page, and not in the data the page hydrates from either.
    expect(await page.content()).not.toContain(email);
    expect(await page.content()).not.toContain(secret);

    await page.getByTestId('reveal').click();
    await expect(page).toHaveURL(new RegExp(`/proposals/${id}\\?revealed=1`));
    await expect(page.getByTestId('flash-notice')).toContainText('audit trail');
    await expect(emailRow.locator('.v')).toHaveText(email);
    await expect(page.getByTestId('personal-revealed')).toBeVisible();
    await expect(secretRow.locator('[data-masked=secret]')).toBeVisible();
    expect(await page.content()).not.toContain(secret);

    // The compliance officer finds the reveal — who, which proposal — and no value in it.
    const { context, page: auditor } = await newSession(browser, server);
    try {
      await login(auditor, server.auditor);
      await auditor.goto(
        `/audit?kind=proposal.personal_data_revealed&actor=${encodeURIComponent(server.reviewer.username)}`,
      );
      const row = auditor.locator(
        `[data-testid=audit-row][data-kind="proposal.personal_data_revealed"]:has(a[href="/audit/proposals/${id}"])`,
      );
      await expect(row).toHaveCount(1);
      await expect(row).toContainText(server.reviewer.username);
      expect(await auditor.content()).not.toContain(email);
    } finally {
      await context.close();
    }

    // Without asking again, the page masks the data again.
    await page.goto(`/proposals/${id}`);
    await expect(emailRow.locator('[data-masked=personal]')).toBeVisible();
  });
});
