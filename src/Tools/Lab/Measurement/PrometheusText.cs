using System.Globalization;

namespace DroneDelivery.Lab.Measurement;

/// <summary>One sample of a Prometheus text exposition.</summary>
internal sealed record PrometheusSample(string Name, IReadOnlyDictionary<string, string> Labels, double Value)
{
    public string? Label(string name) => Labels.TryGetValue(name, out var value) ? value : null;
}

/// <summary>A parser for the Prometheus text format (0.0.4), enough for what our services and emulators expose.</summary>
internal static class PrometheusText
{
    public static IReadOnlyList<PrometheusSample> Parse(string text)
    {
        var samples = new List<PrometheusSample>();
        foreach (var raw in text.Split('\n'))
        {
            var line = raw.Trim();
            if (line.Length == 0 || line[0] == '#')
            {
                continue;
            }

            var labels = new Dictionary<string, string>(StringComparer.Ordinal);
            var brace = line.IndexOf('{', StringComparison.Ordinal);
            var space = line.IndexOf(' ', StringComparison.Ordinal);
            string name;
            string rest;
            if (brace >= 0 && (space < 0 || brace < space))
            {
                name = line[..brace];
                var end = ParseLabels(line, brace + 1, labels);
                rest = line[(end + 1)..].Trim();
            }
            else if (space > 0)
            {
                name = line[..space];
                rest = line[(space + 1)..].Trim();
            }
            else
            {
                continue;
            }

            var valueText = rest.Split(' ', 2)[0];
            var value = valueText switch
            {
                "+Inf" => double.PositiveInfinity,
                "-Inf" => double.NegativeInfinity,
                "NaN" => double.NaN,
                _ => double.TryParse(valueText, NumberStyles.Float, CultureInfo.InvariantCulture, out var v) ? v : double.NaN,
            };
            samples.Add(new PrometheusSample(name, labels, value));
        }

        return samples;
    }

    /// <summary>Parses <c>key="value",...</c> from <paramref name="start"/>; returns the index of the closing brace.</summary>
    private static int ParseLabels(string line, int start, Dictionary<string, string> labels)
    {
        var i = start;
        while (i < line.Length && line[i] != '}')
        {
            var equals = line.IndexOf('=', i);
            var key = line[i..equals].Trim().TrimStart(',').Trim();
            i = equals + 2; // skip ="
            var value = new System.Text.StringBuilder();
            while (i < line.Length && line[i] != '"')
            {
                if (line[i] == '\\' && i + 1 < line.Length)
                {
                    i++;
                    value.Append(line[i] == 'n' ? '\n' : line[i]);
                }
                else
                {
                    value.Append(line[i]);
                }

                i++;
            }

            labels[key] = value.ToString();
            i++; // closing quote
            while (i < line.Length && (line[i] == ',' || line[i] == ' '))
            {
                i++;
            }
        }

        return i;
    }
}
