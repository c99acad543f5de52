using System.Diagnostics;
using System.Diagnostics.Metrics;
using DroneDelivery.ServiceDefaults.Telemetry;

namespace DroneDelivery.Gateway;

/// <summary>Gateway's own telemetry: each backend call of an invoice, its duration and outcome.</summary>
public static class GatewayTelemetry
{
    /// <summary>ActivitySource and Meter name.</summary>
    public const string SourceName = "DroneDelivery.Gateway";

    /// <summary>
    /// Histogram of backend call durations in seconds (retries included); tags <c>backend</c>
    /// (delivery, package, dronescheduler) and <c>outcome</c> (<see cref="Contracts.Backends.BackendOutcome"/>, lower case).
    /// </summary>
    public const string BackendDuration = "dronedelivery.gateway.backend.duration";

    /// <summary>Counter of invoices answered; tag <c>outcome</c>: <c>ok</c>, <c>bad_gateway</c> (502) or <c>gateway_timeout</c> (504).</summary>
    public const string Invoices = "dronedelivery.gateway.invoices";

    private static readonly ComponentTelemetry Telemetry = new(SourceName);

    internal static readonly Histogram<double> BackendCallDuration = Telemetry.Duration(
        BackendDuration, "Duration of the gateway's calls to each backend, retries included.");

    internal static readonly Counter<long> InvoiceCount = Telemetry.Counter(Invoices, "{invoice}", "Invoices answered, by outcome.");

    internal static ActivitySource Source => Telemetry.Source;
}
