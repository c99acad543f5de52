using System.Text.Json;
using System.Text.Json.Serialization;
using DroneDelivery.ServiceDefaults.Hosting;

namespace DroneDelivery.Contracts;

/// <summary>The JSON conventions of every body exchanged between the services and on the queue.</summary>
public static class ContractJson
{
    /// <summary>
    /// camelCase names, enums as their names, null or missing values never silently accepted for
    /// non-nullable members, and a property named twice refused (<see cref="JsonReading"/>).
    /// </summary>
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
        JsonReading.Apply(options);
        options.MakeReadOnly(populateMissingResolver: true);
        return options;
    }
}
