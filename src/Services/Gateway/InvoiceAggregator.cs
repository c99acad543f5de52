using System.Diagnostics;
using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Backends;

namespace DroneDelivery.Gateway;

/// <summary>An invoice, or the backend calls that failed to give one.</summary>
public sealed record InvoiceResult(Invoice? Invoice, IReadOnlyList<BackendFailure> Failures);

/// <summary>One backend that did not give its part of the invoice.</summary>
public sealed record BackendFailure(string Backend, BackendOutcome Outcome, int? StatusCode, string? Detail);

/// <summary>
/// The gateway aggregation of the case study: the three backends' monthly summaries are requested at
/// the same time, so an invoice takes as long as the slowest of them, not their sum. Each call has its
/// backend's time limit (<c>Backends:&lt;name&gt;:Timeout</c>), so a hung backend fails the invoice
/// instead of hanging it.
/// </summary>
public sealed class InvoiceAggregator(IHttpClientFactory clients)
{
    public async Task<InvoiceResult> GetAsync(string ownerId, BillingPeriod period, CancellationToken cancellationToken)
    {
        var deliveries = CallAsync<DeliverySummary>(BackendNames.Delivery, Routes.Deliveries.SummaryPath(ownerId, period.Year, period.Month), cancellationToken);
        var packages = CallAsync<PackageSummary>(BackendNames.Package, Routes.Packages.SummaryPath(ownerId, period.Year, period.Month), cancellationToken);
        var utilization = CallAsync<DroneUtilization>(BackendNames.DroneScheduler, Routes.DroneDeliveries.UtilizationPath(ownerId, period.Year, period.Month), cancellationToken);
        await Task.WhenAll(deliveries, packages, utilization).ConfigureAwait(false);

        List<BackendFailure> failures = [];
        AddFailure(failures, deliveries.Result);
        AddFailure(failures, packages.Result);
        AddFailure(failures, utilization.Result);
        if (failures.Count > 0)
        {
            return new InvoiceResult(null, failures);
        }

        var (d, p, u) = (deliveries.Result.Value!, packages.Result.Value!, utilization.Result.Value!);
        return new InvoiceResult(
            new Invoice(
                ownerId,
                period.Year,
                period.Month,
                new InvoiceDeliveries(d.Count),
                new InvoicePackages(p.Count, p.TotalWeight),
                new InvoiceUtilization(u.TraveledMiles, u.AssignedHours)),
            []);
    }

    private async Task<BackendResult<T>> CallAsync<T>(string backend, string path, CancellationToken cancellationToken)
    {
        using var activity = GatewayTelemetry.Source.StartActivity($"GET {backend} summary", ActivityKind.Internal);
        activity?.SetTag("backend", backend);
        var started = Stopwatch.GetTimestamp();
        var result = await BackendCall.SendAsync<T>(clients.CreateClient(backend), backend, HttpMethod.Get, path, null, cancellationToken).ConfigureAwait(false);
        if (result.Succeeded && result.Value is null)
        {
            result = result with { Outcome = BackendOutcome.Failed, Detail = "empty response body" };
        }

        var outcome = result.Outcome.ToString().ToLowerInvariant();
        GatewayTelemetry.BackendCallDuration.Record(
            Stopwatch.GetElapsedTime(started).TotalSeconds,
            new KeyValuePair<string, object?>("backend", backend),
            new KeyValuePair<string, object?>("outcome", outcome));
        activity?.SetTag("outcome", outcome);
        if (!result.Succeeded)
        {
            activity?.SetStatus(ActivityStatusCode.Error, result.Describe());
        }

        return result;
    }

    private static void AddFailure<T>(List<BackendFailure> failures, BackendResult<T> result)
    {
        if (!result.Succeeded)
        {
            failures.Add(new BackendFailure(result.Backend, result.Outcome, (int?)result.StatusCode, result.Detail));
        }
    }
}
