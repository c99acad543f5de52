using System.Text.Json;
using System.Text.Json.Serialization;

namespace DroneDelivery.Contracts;

/// <summary>The JSON conventions of every body exchanged between the services and on the queue.</summary>
public static class ContractJson
{
    /// <summary>camelCase names, enums as their names, and null or missing values never silently accepted for non-nullable members.</summary>
    public static JsonSerializerOptions Options { get; } = Create();

    private static JsonSerializerOptions Create()
    {
        var options = new JsonSerializerOptions(JsonSerializerDefaults.Web)
        {
            RespectNullableAnnotations = true,
            RespectRequiredConstructorParameters = true,
            DefaultIgnoreCondition = JsonIgnoreCondition.WhenWritingNull,
        };
        options.Converters.Add(new JsonStringEnumConverter(allowIntegerValues: false));
        options.MakeReadOnly(populateMissingResolver: true);
        return options;
    }
}
