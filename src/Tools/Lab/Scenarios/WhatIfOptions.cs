using System.CommandLine;
using DroneDelivery.Lab.Steps;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>
/// <c>run</c>'s helm-style value options: <c>-f/--values</c>, <c>--set</c>, <c>--set-string</c>,
/// <c>--set-file</c>, each repeatable. With any of them, every chosen step also runs as a what-if.
/// </summary>
internal sealed class WhatIfOptions(string purpose = "What-if")
{
    private readonly Option<string[]> _files = new("--values", "-f")
    {
        Description = $"{purpose}: a values file merged over each chosen step's overlay (repeatable; later files win), as helm -f.",
        AllowMultipleArgumentsPerToken = false,
    };

    private readonly Option<string[]> _set = new("--set")
    {
        Description = $"{purpose}: values as helm --set (a.b=1,c[0].d=x; repeatable), applied after every -f.",
        AllowMultipleArgumentsPerToken = false,
    };

    private readonly Option<string[]> _setString = new("--set-string")
    {
        Description = $"{purpose}: values as helm --set-string (always text), applied after every --set.",
        AllowMultipleArgumentsPerToken = false,
    };

    private readonly Option<string[]> _setFile = new("--set-file")
    {
        Description = $"{purpose}: values as helm --set-file (a.b=path: the file's content), applied last.",
        AllowMultipleArgumentsPerToken = false,
    };

    public void AddTo(Command command)
    {
        command.Options.Add(_files);
        command.Options.Add(_set);
        command.Options.Add(_setString);
        command.Options.Add(_setFile);
    }

    /// <summary>The what-if the command line asks for, or null when it sets no values.</summary>
    public WhatIf? Read(ParseResult parse)
    {
        IEnumerable<ValuesSource> Of(Option<string[]> option, ValuesSourceKind kind) =>
            (parse.GetValue(option) ?? []).Select(text => new ValuesSource(kind, text));

        List<ValuesSource> sources =
        [
            .. Of(_files, ValuesSourceKind.File), .. Of(_set, ValuesSourceKind.Set),
            .. Of(_setString, ValuesSourceKind.SetString), .. Of(_setFile, ValuesSourceKind.SetFile),
        ];
        return sources.Count == 0 ? null : new WhatIf(sources);
    }

    /// <summary>
    /// Why the run cannot start (unknown step, a values file or expression that does not parse, values
    /// the chart's schema refuses), or null. Checked before anything starts.
    /// </summary>
    public static string? Problem(LabRunOptions options)
    {
        var catalog = StepCatalog.Load(options.ChartDirectory);
        var known = LabRunner.All.SelectMany(s => s.StepIds).ToHashSet(StringComparer.OrdinalIgnoreCase);
        if (options.Steps.FirstOrDefault(id => !known.Contains(id)) is { } unknown)
        {
            return $"Unknown step '{unknown}'. Known: {string.Join(", ", known.Order(StringComparer.Ordinal))}.";
        }

        var chosen = LabRunner.ChosenStepIds(options).ToList();
        if (options.WhatIf is not null && chosen.Count == 0)
        {
            return "The what-if values apply to the chosen steps, and none of the chosen scenarios has one of the --steps.";
        }

        foreach (var id in chosen)
        {
            if (catalog.Schema.Validate(catalog[id].Values) is { Count: > 0 } violations)
            {
                return $"Step {id}'s values don't meet the chart's values.schema.json:{Environment.NewLine}{string.Join(Environment.NewLine, violations.Select(v => "  - " + v))}";
            }

            if (options.WhatIf is { } whatIf)
            {
                try
                {
                    catalog.WhatIf(id, whatIf);
                }
                catch (InvalidDataException e)
                {
                    return e.Message;
                }
            }
        }

        return null;
    }
}
