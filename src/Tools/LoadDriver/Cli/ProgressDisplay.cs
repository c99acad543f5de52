using System.Globalization;
using Spectre.Console;
using Spectre.Console.Rendering;

namespace DroneDelivery.LoadDriver.Cli;

/// <summary>How progress is shown: a live table in a terminal, periodic lines elsewhere (CI), or not at all.</summary>
internal enum ProgressMode
{
    Auto,
    Live,
    Plain,
    None,
}

/// <summary>
/// Shows a run's progress without ever slowing it: <see cref="Report"/> only stores the latest snapshot,
/// and a separate loop renders it at its own pace.
/// </summary>
internal sealed class ProgressDisplay : IProgress<LoadProgress>
{
    private static readonly TimeSpan LiveRefresh = TimeSpan.FromMilliseconds(500);

    private readonly ProgressMode _mode;
    private readonly TextWriter _output;
    private readonly TimeSpan _plainInterval;
    private readonly string _title;
    private LoadProgress? _latest;

    /// <param name="mode">Live or Plain (Auto is resolved by the caller); None shows nothing.</param>
    public ProgressDisplay(ProgressMode mode, TextWriter output, TimeSpan plainInterval, string title)
    {
        _mode = mode;
        _output = output;
        _plainInterval = plainInterval;
        _title = title;
    }

    public void Report(LoadProgress value) => Volatile.Write(ref _latest, value);

    /// <summary>Renders until <paramref name="work"/> completes, then returns its result.</summary>
    public async Task<T> ShowWhileAsync<T>(Task<T> work)
    {
        switch (_mode)
        {
            case ProgressMode.Live:
                await AnsiConsole.Live(Render(null)).AutoClear(false).StartAsync(async context =>
                {
                    while (!work.IsCompleted)
                    {
                        await Task.WhenAny(work, Task.Delay(LiveRefresh)).ConfigureAwait(false);
                        context.UpdateTarget(Render(Volatile.Read(ref _latest)));
                        context.Refresh();
                    }
                }).ConfigureAwait(false);
                break;
            case ProgressMode.Plain:
                LoadProgress? shown = null;
                while (!work.IsCompleted)
                {
                    await Task.WhenAny(work, Task.Delay(_plainInterval)).ConfigureAwait(false);
                    var latest = Volatile.Read(ref _latest);
                    if (!work.IsCompleted && latest is not null && !ReferenceEquals(latest, shown))
                    {
                        await _output.WriteLineAsync(Line(latest)).ConfigureAwait(false);
                        shown = latest;
                    }
                }

                // The run's final report arrives as it ends; a log shows it even when the run was
                // shorter than one display interval.
                if (Volatile.Read(ref _latest) is { } last && !ReferenceEquals(last, shown))
                {
                    await _output.WriteLineAsync(Line(last)).ConfigureAwait(false);
                }

                break;
        }

        return await work.ConfigureAwait(false);
    }

    /// <summary>One progress line, e.g. <c>[  12s/480s] users 5 | 48.0 req/s (ok 48, err 0) | p50 3.1 ms p99 9.8 ms | in flight 2</c>.</summary>
    internal static string Line(LoadProgress p)
    {
        var last = p.LastSecond;
        var load = p.ActiveUsers is { } users ? $"users {users}" : $"rate {Format(p.TargetRate ?? 0, "0.#")}/s";
        var text = $"[{p.Elapsed.TotalSeconds,5:0}s/{p.LoadDuration.TotalSeconds:0}s]{(p.Draining ? " draining" : "")} {load}"
            + $" | {Format(last?.Requests ?? 0, "0")} req/s (ok {Format(last?.Successes ?? 0, "0")}, err {Format(last?.Errors ?? 0, "0")})"
            + $" | p50 {Ms(last?.P50Ms)} p99 {Ms(last?.P99Ms)} | in flight {p.InFlight} | total {p.Requests}, errors {p.Errors}";
        if (p.Completed is { } completed)
        {
            text += $" | completed {completed}, pending {p.CompletionsPending}";
        }

        return text;
    }

    private IRenderable Render(LoadProgress? p)
    {
        var table = new Table().Border(TableBorder.Rounded).Title(Markup.Escape(_title)).AddColumn("").AddColumn("");
        table.ShowHeaders = false;
        if (p is null)
        {
            table.AddRow("starting", "");
            return table;
        }

        var last = p.LastSecond;
        table.AddRow("elapsed", $"{p.Elapsed.TotalSeconds:0} s of {p.LoadDuration.TotalSeconds:0} s{(p.Draining ? " (draining)" : "")}");
        table.AddRow(p.ActiveUsers is not null ? "users" : "target rate", p.ActiveUsers?.ToString(CultureInfo.InvariantCulture) ?? $"{Format(p.TargetRate ?? 0, "0.#")} req/s");
        table.AddRow("last second", $"{last?.Requests ?? 0} req ({last?.Successes ?? 0} ok, {last?.Errors ?? 0} errors)");
        table.AddRow("latency, last second", $"p50 {Ms(last?.P50Ms)}  p99 {Ms(last?.P99Ms)}  max {Ms(last?.MaxMs)}");
        table.AddRow("latency p99, whole run", Ms(p.OverallP99Ms));
        table.AddRow("totals", $"{p.Sent} sent, {p.Requests} finished, {p.Errors} errors, {p.InFlight} in flight");
        if (p.Completed is { } completed)
        {
            table.AddRow("completions", $"{completed} completed, {p.CompletionsPending} pending");
        }

        return table;
    }

    private static string Ms(double? value) => value is { } v ? $"{Format(v, "0.0")} ms" : "-";

    private static string Format(double value, string format) => value.ToString(format, CultureInfo.InvariantCulture);
}
