using System.ComponentModel.DataAnnotations;
using Azure.Identity;
using DroneDelivery.ServiceBus;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;

namespace DroneDelivery.Contracts.Messaging;

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
            string? error = null;
            try
            {
                ServiceBusConnectionStringProperties.Parse(ConnectionString!);
            }
            catch (FormatException e)
            {
                error = e.Message;
            }

            if (error is not null)
            {
                yield return new ValidationResult($"ConnectionString is not a Service Bus connection string: {error}", [nameof(ConnectionString)]);
            }
        }
    }
}

public static class ServiceBusClients
{
    /// <summary>Binds the <c>ServiceBus</c> section and registers the process's one <see cref="ServiceBusClient"/> (one AMQP connection).</summary>
    public static IHostApplicationBuilder AddServiceBus(this IHostApplicationBuilder builder)
    {
        builder.AddSettings<ServiceBusSettings>("ServiceBus");
        builder.Services.AddSingleton(services =>
        {
            var settings = services.GetRequiredService<IOptions<ServiceBusSettings>>().Value;
            return string.IsNullOrWhiteSpace(settings.ConnectionString)
                ? new ServiceBusClient(settings.FullyQualifiedNamespace!, new DefaultAzureCredential())
                : new ServiceBusClient(settings.ConnectionString);
        });
        return builder;
    }
}
