using Microsoft.Playwright;

namespace DroneDelivery.Lab.Tests;

/// <summary>
/// Debian's chromium (installed by .ci/setup), driven headless through Playwright: what a user's browser renders
/// of a page, after its scripts ran — not the HTML a server sent.
/// </summary>
internal sealed class Chromium : IAsyncDisposable
{
    private const string Executable = "/usr/bin/chromium";

    private readonly IPlaywright _playwright;
    private readonly IBrowser _browser;

    private Chromium(IPlaywright playwright, IBrowser browser) => (_playwright, _browser) = (playwright, browser);

    public static async Task<Chromium> StartAsync()
    {
        if (!File.Exists(Executable))
        {
            throw new InvalidOperationException($"{Executable} is missing: install Debian's chromium (.ci/setup does).");
        }

        var playwright = await Playwright.CreateAsync();
        try
        {
            // --no-sandbox: the tests may run as root, where chromium refuses its sandbox.
            var browser = await playwright.Chromium.LaunchAsync(new() { ExecutablePath = Executable, Headless = true, Args = ["--no-sandbox"] });
            return new Chromium(playwright, browser);
        }
        catch
        {
            playwright.Dispose();
            throw;
        }
    }

    /// <summary>
    /// Opens <paramref name="url"/>, waits until the rendered page shows every one of <paramref name="texts"/> (or
    /// <paramref name="timeout"/> passes), saves a screenshot to <paramref name="screenshot"/>, and returns the page's
    /// visible text.
    /// </summary>
    public async Task<string> RenderAsync(Uri url, string screenshot, TimeSpan timeout, params string[] texts)
    {
        var page = await _browser.NewPageAsync(new() { ViewportSize = new() { Width = 1400, Height = 1000 } });
        try
        {
            await page.GotoAsync(url.ToString());
            foreach (var text in texts)
            {
                try
                {
                    await page.GetByText(text, new() { Exact = false }).First.WaitForAsync(new() { Timeout = (float)timeout.TotalMilliseconds });
                }
                catch (PlaywrightException)
                {
                    // The assertion on the returned text says what was missing.
                }
            }

            await page.ScreenshotAsync(new() { Path = screenshot, FullPage = true });
            return await page.InnerTextAsync("body");
        }
        finally
        {
            await page.CloseAsync();
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _browser.DisposeAsync();
        _playwright.Dispose();
    }
}
