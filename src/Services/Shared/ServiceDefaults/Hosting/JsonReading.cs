using System.Text.Json;

namespace DroneDelivery.ServiceDefaults.Hosting;

/// <summary>
/// How every service reads the JSON it is sent: request bodies (the HTTP JSON options
/// <see cref="ServiceDefaultsExtensions.AddServiceDefaults"/> configures), backend answers and queue
/// messages (the contracts' options). A property named twice is refused, naming it (a 400 problem
/// for a request): readers disagree on which of two equal names wins, so a proxy, a firewall or
/// another service could read a different owner from the same body than the one the owner check read.
/// </summary>
public static class JsonReading
{
    public static void Apply(JsonSerializerOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.AllowDuplicateProperties = false;
    }
}
