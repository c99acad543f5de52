using System.ComponentModel.DataAnnotations;
using Azure.Identity;
using Azure.Messaging.ServiceBus;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace DroneDelivery.ServiceClients.Messaging;

/// <summary>The Service Bus namespace and queue of Ingestion and Workflow (section <c>ServiceBus</c>).</summary>
public sealed class ServiceBusSettings : IValidatableObject
{
    /// <summary>
    /// <c>Endpoint=sb://...;SharedAccessKeyName=...;SharedAccessKey=...</c> (the key is masked in logs);
    /// locally the emulator's, with <c>UseDevelopmentEmulator=true</c>. On Azure leave it unset and set
    /// <see cref="FullyQualifiedNamespace"/> for Entra ID (workload identity). Exactly one is required.
    /// </summary>
    public string? ConnectionString { get; set; }

    /// <summary>The namespace host, e.g. <c>contoso.servicebus.windows.net</c>, used with DefaultAzureCredential.</summary>
    public string? FullyQualifiedNamespace { get; set; }

    /// <summary>The queue of delivery requests. Default <c>deliveryrequests</c>.</summary>
    [Required]
    [RegularExpression("^[A-Za-z0-9][A-Za-z0-9._-]{0,259}$", ErrorMessage = "QueueName must be 1-260 letters, digits, '.', '_' or '-'.")]
    public string QueueName { get; set; } = "deliveryrequests";

    /// <summary>How the client retries a failed operation and how long one attempt may take (section <c>ServiceBus:Retry</c>).</summary>
    public ServiceBusRetrySettings Retry { get; set; } = new();

    public IEnumerable<ValidationResult> Validate(ValidationContext validationContext)
    {
        var hasConnectionString = !string.IsNullOrWhiteSpace(ConnectionString);
        if (hasConnectionString == !string.IsNullOrWhiteSpace(FullyQualifiedNamespace))
        {
            yield return new ValidationResult(
                "Exactly one of ConnectionString (shared access key) and FullyQualifiedNamespace (Entra ID) must be set.",
                [nameof(ConnectionString), nameof(FullyQualifiedNamespace)]);
        }

        if (hasConnectionString)
        {
            var error = ConnectionStringError(ConnectionString!);
            if (error is not null)
            {
                yield return new ValidationResult($"ConnectionString is not a Service Bus connection string: {error}", [nameof(ConnectionString)]);
            }
        }
    }

    /// <summary>What the SDK's client would refuse in <paramref name="connectionString"/>, checked here so start-up names the setting.</summary>
    private static string? ConnectionStringError(string connectionString)
    {
        ServiceBusConnectionStringProperties properties;
        try
        {
            properties = ServiceBusConnectionStringProperties.Parse(connectionString);
        }
        catch (Exception e) when (e is FormatException or ArgumentException)
        {
            return e.Message;
        }

        if (properties.Endpoint is not { IsAbsoluteUri: true } || string.IsNullOrEmpty(properties.FullyQualifiedNamespace))
        {
            return "it needs Endpoint=sb://<namespace>.";
        }

        return string.IsNullOrEmpty(properties.SharedAccessSignature) && (string.IsNullOrEmpty(properties.SharedAccessKeyName) || string.IsNullOrEmpty(properties.SharedAccessKey))
            ? "it needs SharedAccessKeyName and SharedAccessKey (or SharedAccessSignature)."
            : null;
    }
}

/// <summary>
/// The client's retry policy (section <c>ServiceBus:Retry</c>): the SDK's <see cref="ServiceBusRetryOptions"/>, with its
/// defaults and its bounds. It governs every send, settlement and lock renewal, and <see cref="TryTimeout"/> is also how
/// long the processor's receive calls wait for a message.
/// </summary>
public sealed class ServiceBusRetrySettings
{
    /// <summary>Exponential (the delay doubles per retry, with jitter) or Fixed. Default Exponential.</summary>
    public ServiceBusRetryMode Mode { get; set; } = ServiceBusRetryMode.Exponential;

    /// <summary>Retries after the first attempt (count, 0 – 100). Default 3.</summary>
    [Range(0, 100)]
    public int MaxRetries { get; set; } = 3;

    /// <summary>Delay before the first retry, the base of the exponential ones (1 ms – 5 min). Default 00:00:00.800.</summary>
    [Range(typeof(TimeSpan), "00:00:00.001", "00:05:00")]
    public TimeSpan Delay { get; set; } = TimeSpan.FromSeconds(0.8);

    /// <summary>Longest delay between two attempts (0 – 1 h). Default 00:01:00.</summary>
    [Range(typeof(TimeSpan), "00:00:00", "01:00:00")]
    public TimeSpan MaxDelay { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>Time one attempt may take, and the processor's wait for a message (1 s – 1 h). Default 00:01:00.</summary>
    [Range(typeof(TimeSpan), "00:00:01", "01:00:00")]
    public TimeSpan TryTimeout { get; set; } = TimeSpan.FromMinutes(1);

    /// <summary>The SDK's options with these values.</summary>
    public ServiceBusRetryOptions ToOptions() => new()
    {
        Mode = Mode,
        MaxRetries = MaxRetries,
        Delay = Delay,
        MaxDelay = MaxDelay,
        TryTimeout = TryTimeout,
    };
}

public static class ServiceBusClients
{
    /// <summary>
    /// Binds the <c>ServiceBus</c> section and registers the process's one <see cref="ServiceBusClient"/> (one AMQP
    /// connection): with the connection string (the emulator's honours <c>UseDevelopmentEmulator=true</c>: plain AMQP
    /// on its port), or with the namespace and DefaultAzureCredential (workload identity on AKS).
    /// </summary>
    public static IHostApplicationBuilder AddServiceBus(this IHostApplicationBuilder builder)
    {
        builder.AddSettings<ServiceBusSettings>("ServiceBus");
        builder.Services.AddSingleton(services => CreateClient(services.GetRequiredService<IOptions<ServiceBusSettings>>().Value));
        return builder;
    }

    /// <summary>The client <paramref name="settings"/> describe.</summary>
    public static ServiceBusClient CreateClient(ServiceBusSettings settings)
    {
        var options = new ServiceBusClientOptions { RetryOptions = settings.Retry.ToOptions() };
        return string.IsNullOrWhiteSpace(settings.ConnectionString)
            ? new ServiceBusClient(settings.FullyQualifiedNamespace!, new DefaultAzureCredential(), options)
            : new ServiceBusClient(settings.ConnectionString, options);
    }
}
