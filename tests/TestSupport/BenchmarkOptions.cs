using System.CommandLine;

namespace DroneDelivery.TestSupport;

/// <summary>The kinds of option the benchmarks' command lines share.</summary>
public static class BenchmarkOptions
{
    /// <summary>A whole number above 0, with its default.</summary>
    public static Option<int> Positive(string name, int defaultValue, string description)
    {
        var option = new Option<int>(name) { Description = description, DefaultValueFactory = _ => defaultValue };
        option.Validators.Add(result =>
        {
            if (result.GetValueOrDefault<int>() <= 0)
            {
                result.AddError($"{name} needs a positive integer.");
            }
        });
        return option;
    }

    /// <summary>A number above <paramref name="minimum"/> (exclusive), with its default.</summary>
    public static Option<double> Above(string name, double minimum, double defaultValue, string description)
    {
        var option = new Option<double>(name) { Description = description, DefaultValueFactory = _ => defaultValue };
        option.Validators.Add(result =>
        {
            if (result.GetValueOrDefault<double>() <= minimum)
            {
                result.AddError($"{name} must be above {minimum}.");
            }
        });
        return option;
    }

    /// <summary>Parses the arguments; null, with the exit code, when they are refused (2, the errors printed) or when --help was asked for (0).</summary>
    public static async Task<(ParseResult? Parse, int ExitCode)> ParseAsync(RootCommand command, string[] args)
    {
        var parse = command.Parse(args);
        if (parse.Errors.Count > 0)
        {
            foreach (var error in parse.Errors)
            {
                await Console.Error.WriteLineAsync(error.Message);
            }

            return (null, 2);
        }

        return parse.Action is null ? (parse, 0) : (null, await parse.InvokeAsync());
    }
}
