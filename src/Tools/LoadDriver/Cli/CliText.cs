using System.Globalization;
using System.Text.RegularExpressions;

namespace DroneDelivery.LoadDriver.Cli;

/// <summary>Parsing of the command line's compact values: durations, load shapes and month ranges.</summary>
internal static partial class CliText
{
    /// <summary>
    /// A duration as one or more number-unit pairs, units <c>ms</c>, <c>s</c>, <c>m</c>, <c>h</c>
    /// (<c>500ms</c>, <c>30s</c>, <c>8m</c>, <c>1m30s</c>, <c>0.5s</c>), or <c>hh:mm:ss</c>; a bare <c>0</c> is zero.
    /// </summary>
    public static bool TryParseDuration(string text, out TimeSpan duration, out string error)
    {
        duration = TimeSpan.Zero;
        error = "";
        var trimmed = text.Trim();
        if (trimmed == "0")
        {
            return true;
        }

        // The form help prints defaults in (hh:mm:ss) is accepted too.
        if (trimmed.Contains(':', StringComparison.Ordinal))
        {
            if (TimeSpan.TryParseExact(trimmed, "c", CultureInfo.InvariantCulture, out duration) && duration >= TimeSpan.Zero)
            {
                return true;
            }

            error = $"'{text}' is not a duration; use a number with a unit (500ms, 30s, 8m, 1h, 1m30s) or hh:mm:ss.";
            return false;
        }

        var match = DurationPattern().Match(trimmed);
        if (!match.Success)
        {
            error = $"'{text}' is not a duration; use a number with a unit, e.g. 500ms, 30s, 8m, 1h or 1m30s.";
            return false;
        }

        double seconds = 0;
        foreach (Capture capture in match.Groups["part"].Captures)
        {
            var part = PartPattern().Match(capture.Value);
            var value = double.Parse(part.Groups["value"].Value, NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture);
            seconds += part.Groups["unit"].Value switch
            {
                "ms" => value / 1000,
                "s" => value,
                "m" => value * 60,
                _ => value * 3600,
            };
        }

        if (seconds > TimeSpan.FromDays(7).TotalSeconds)
        {
            error = $"'{text}' is longer than a week.";
            return false;
        }

        duration = TimeSpan.FromTicks((long)Math.Round(seconds * TimeSpan.TicksPerSecond));
        return true;
    }

    /// <summary>A duration the way <see cref="TryParseDuration"/> reads it, e.g. <c>1m30s</c>, <c>250ms</c>, <c>0</c>.</summary>
    public static string FormatDuration(TimeSpan duration)
    {
        if (duration <= TimeSpan.Zero)
        {
            return "0";
        }

        var text = new System.Text.StringBuilder();
        if (duration.Days > 0 || duration.Hours > 0)
        {
            text.Append(CultureInfo.InvariantCulture, $"{(int)duration.TotalHours}h");
        }

        if (duration.Minutes > 0)
        {
            text.Append(CultureInfo.InvariantCulture, $"{duration.Minutes}m");
        }

        if (duration.Seconds > 0)
        {
            text.Append(CultureInfo.InvariantCulture, $"{duration.Seconds}s");
        }

        var milliseconds = duration.TotalMilliseconds % 1000;
        if (milliseconds > 0)
        {
            text.Append(CultureInfo.InvariantCulture, $"{Math.Round(milliseconds, 3)}ms");
        }

        return text.ToString();
    }

    /// <summary>Closed model: <c>FROM:TO:RAMP[:HOLD]</c>, e.g. <c>1:40:8m</c> or <c>10:10:0:2m</c>.</summary>
    public static bool TryParseStep(string text, out ClosedLoad? shape, out string error)
    {
        shape = null;
        var parts = text.Split(':');
        if (parts.Length is < 3 or > 4)
        {
            error = $"'{text}' is not a step load; use FROM:TO:RAMP[:HOLD], e.g. 1:40:8m or 10:10:0:2m.";
            return false;
        }

        if (!TryParseCount(parts[0], "users from", out var from, out error)
            || !TryParseCount(parts[1], "users to", out var to, out error)
            || !TryParseDuration(parts[2], out var ramp, out error))
        {
            return false;
        }

        var hold = TimeSpan.Zero;
        if (parts.Length == 4 && !TryParseDuration(parts[3], out hold, out error))
        {
            return false;
        }

        shape = new ClosedLoad(from, to, ramp) { Hold = hold };
        return true;
    }

    /// <summary>Open model: <c>RATE:DURATION</c> (constant) or <c>FROM:TO:RAMP[:HOLD]</c> (ramping), in requests per second.</summary>
    public static bool TryParseRate(string text, out OpenLoad? shape, out string error)
    {
        shape = null;
        var parts = text.Split(':');
        if (parts.Length is < 2 or > 4)
        {
            error = $"'{text}' is not an arrival rate; use RATE:DURATION (e.g. 50:2m) or FROM:TO:RAMP[:HOLD] (e.g. 10:200:2m:1m).";
            return false;
        }

        if (parts.Length == 2)
        {
            if (!TryParseRateValue(parts[0], out var rate, out error) || !TryParseDuration(parts[1], out var duration, out error))
            {
                return false;
            }

            shape = OpenLoad.Constant(rate, duration);
            return true;
        }

        if (!TryParseRateValue(parts[0], out var from, out error)
            || !TryParseRateValue(parts[1], out var to, out error)
            || !TryParseDuration(parts[2], out var ramp, out error))
        {
            return false;
        }

        var hold = TimeSpan.Zero;
        if (parts.Length == 4 && !TryParseDuration(parts[3], out hold, out error))
        {
            return false;
        }

        shape = new OpenLoad(from, to, ramp) { Hold = hold };
        return true;
    }

    /// <summary>A month or an inclusive range: <c>3</c> or <c>1-12</c>.</summary>
    public static bool TryParseMonths(string text, out (int First, int Last) months, out string error)
    {
        months = default;
        error = "";
        var parts = text.Split('-');
        if (parts.Length is < 1 or > 2
            || !int.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out var first)
            || !int.TryParse(parts[^1], NumberStyles.None, CultureInfo.InvariantCulture, out var last))
        {
            error = $"'{text}' is not a month range; use a month (3) or a range (1-12).";
            return false;
        }

        months = (first, last);
        return true;
    }

    private static bool TryParseCount(string text, string what, out int value, out string error)
    {
        error = "";
        if (int.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out value))
        {
            return true;
        }

        error = $"'{text}' is not a whole number of {what}.";
        return false;
    }

    private static bool TryParseRateValue(string text, out double value, out string error)
    {
        error = "";
        if (double.TryParse(text, NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out value))
        {
            return true;
        }

        error = $"'{text}' is not a rate in requests per second.";
        return false;
    }

    [GeneratedRegex(@"^(?<part>\d+(\.\d+)?(ms|s|m|h))+$")]
    private static partial Regex DurationPattern();

    [GeneratedRegex(@"^(?<value>\d+(\.\d+)?)(?<unit>ms|s|m|h)$")]
    private static partial Regex PartPattern();
}
