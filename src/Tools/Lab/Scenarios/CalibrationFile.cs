using System.Text.Json;
using System.Text.Json.Serialization;

namespace DroneDelivery.Lab.Scenarios;

/// <summary>
/// A calibration as JSON: the built-in profiles printed by the <c>calibration</c> command, and the
/// files <c>--calibration</c> reads (every property may be left out and keeps the default; an unknown
/// property, a wrong type or a value out of range is an error naming it).
/// </summary>
internal static class CalibrationFile
{
    private static readonly JsonSerializerOptions Options = new(JsonSerializerDefaults.Web)
    {
        WriteIndented = true,
        ReadCommentHandling = JsonCommentHandling.Skip,
        AllowTrailingCommas = true,
        UnmappedMemberHandling = JsonUnmappedMemberHandling.Disallow,
        RespectRequiredConstructorParameters = true,
        RespectNullableAnnotations = true,
        NumberHandling = JsonNumberHandling.Strict,
    };

    public static string ToJson(LabCalibration calibration) => JsonSerializer.Serialize(calibration, Options);

    /// <summary>A built-in profile by name (<see cref="LabCalibration.Profiles"/>), else a JSON file at that path.</summary>
    /// <exception cref="CalibrationException">No such profile or file, or the file is not a valid calibration.</exception>
    public static LabCalibration Load(string nameOrPath)
    {
        if (LabCalibration.Profiles.TryGetValue(nameOrPath, out var profile))
        {
            return profile;
        }

        if (!File.Exists(nameOrPath))
        {
            throw new CalibrationException(
                $"calibration '{nameOrPath}' is neither a file nor a built-in profile ({string.Join(", ", LabCalibration.Profiles.Keys)}).");
        }

        return Parse(File.ReadAllText(nameOrPath), nameOrPath);
    }

    /// <summary>Reads a calibration from <paramref name="json"/>; <paramref name="source"/> names it in errors.</summary>
    public static LabCalibration Parse(string json, string source)
    {
        LabCalibration? calibration;
        try
        {
            calibration = JsonSerializer.Deserialize<LabCalibration>(json, Options);
        }
        catch (JsonException e)
        {
            // The serializer's message names the property ($.cosmosLatency.fixedMilliseconds) and the line.
            throw new CalibrationException($"calibration {source}: {e.Message}", e);
        }

        if (calibration is null)
        {
            throw new CalibrationException($"calibration {source}: the file holds null, not a calibration object.");
        }

        var problems = calibration.Problems();
        if (problems.Count > 0)
        {
            throw new CalibrationException($"calibration {source}: {string.Join("; ", problems)}.");
        }

        return calibration with { Name = source };
    }
}

/// <summary>A calibration that cannot be used; the message says why, naming the file and the property.</summary>
internal sealed class CalibrationException(string message, Exception? inner = null) : Exception(message, inner);
