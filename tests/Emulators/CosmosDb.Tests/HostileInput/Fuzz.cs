using DroneDelivery.TestSupport;
using FsCheck;
using Xunit.Abstractions;

namespace DroneDelivery.Emulators.CosmosDb.Tests.HostileInput;

/// <summary>
/// The shared <see cref="HostileInputRunner"/> with this emulator's hang bound and verdict, and the sample of
/// cases sent over HTTP.
/// </summary>
internal static class Fuzz
{
    /// <summary>Cases per target and path in the normal test run.</summary>
    public const int Cases = HostileInputRunner.Cases;

    /// <summary>Cases per target sent over HTTP when the bulk goes straight to the parser or pipeline.</summary>
    public const int HttpSample = 1_000;

    /// <summary>Runs <paramref name="cases"/> cases of <paramref name="check"/> and returns how many ran.</summary>
    public static int Run<T>(string target, Arbitrary<T> inputs, int cases, Action<T> check, Action afterBatch) =>
        HostileInputRunner.Run(target, inputs, cases, check, afterBatch);

    /// <summary>
    /// Runs <paramref name="work"/> on a pool thread, as the emulator runs requests, and waits at most
    /// <see cref="HostileEmulator.HangTimeout"/>: its result, or the exception it threw; a hang fails the case.
    /// </summary>
    public static (T? Result, Exception? Error) Bounded<T>(object input, Func<T> work) =>
        HostileInputRunner.Bounded(input, HostileEmulator.HangTimeout, work);

    /// <summary>Runs a target's paths and prints the cases each ran and how long it took.</summary>
    public static void Report(ITestOutputHelper output, string target, params (string Path, Func<int> Run)[] paths) =>
        HostileInputRunner.Report(output, target, "no 5xx, hang, escaped exception or malformed error", paths);
}

/// <summary>The rules every answer to hostile input must keep.</summary>
internal static class Verdict
{
    // Every status the emulator answers on purpose. 424 appears only inside batch answers; 429 only
    // from the throughput model (sub-status 3200 with a retry-after), 413 for bodies over 2 MB.
    private static readonly HashSet<int> Allowed = [200, 201, 204, 207, 304, 400, 401, 404, 405, 409, 412, 413, 429];

    /// <summary>Throws unless the answer is one the emulator may give: never a 5xx, and every error in the service's shape.</summary>
    public static HostileResponse Check(HostileRequest request, HostileResponse response)
    {
        if (response.Status >= 500)
        {
            Fail(request, response, "a server error");
        }

        // Kestrel itself answers a request line over 8 KB with 414 and headers over 32 KB with 431,
        // before the emulator sees the request; the service has such limits too.
        if (response.Status == 414 && request.Path.Length > 7_500)
        {
            return response;
        }

        if (response.Status == 431 && request.Headers.Sum(h => h.Key.Length + HostileGen.HeaderSafe(h.Value).Length + 4) > 30_000)
        {
            return response;
        }

        // Kestrel refuses a request target with an encoded NUL with a bare 400, before the emulator.
        if (response.Status == 400 && response.Body.Length == 0 && HostileEmulator.ServerPath(request.Path).Contains('\0', StringComparison.Ordinal))
        {
            return response;
        }

        if (!Allowed.Contains(response.Status))
        {
            Fail(request, response, "a status the emulator never answers on purpose");
        }

        if (response.Status == 429 && (response.SubStatus != 3200 || !int.TryParse(response.RetryAfter, out _)))
        {
            Fail(request, response, "a 429 that is not the throughput model's (sub-status 3200 with x-ms-retry-after-ms)");
        }

        if (response.Status >= 400 && request.Method != "HEAD" && string.IsNullOrWhiteSpace(response.ErrorMessage()))
        {
            Fail(request, response, "an error without the service's {\"code\", \"message\"} body");
        }

        return response;
    }

    /// <summary>Checks the answer, then that it is a 400 (with the sub-status when given) whose message contains <paramref name="naming"/>.</summary>
    public static void BadRequest(HostileRequest request, HostileResponse response, string naming, int subStatus = 0)
    {
        Check(request, response);
        if (response.Status is 414 or 431)
        {
            // Over Kestrel's own size limits: refused before the emulator could look at it.
            return;
        }

        if (response.Status != 400 || (subStatus != 0 && response.SubStatus != subStatus)
            || !response.ErrorMessage()!.Contains(naming, StringComparison.OrdinalIgnoreCase))
        {
            Fail(request, response, $"not the 400{(subStatus != 0 ? "/" + subStatus : string.Empty)} naming '{naming}' the service answers");
        }
    }

    private static void Fail(HostileRequest request, HostileResponse response, string what) =>
        throw new HostileInputException($"{request} was answered {response}: {what}.");
}
