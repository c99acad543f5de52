using DroneDelivery.Contracts;
using DroneDelivery.ServiceClients.Backends;
using DroneDelivery.Contracts.Http;
using DroneDelivery.Security.PublicApis;
using DroneDelivery.ServiceDefaults.Hosting;
using Microsoft.AspNetCore.Http.HttpResults;

namespace DroneDelivery.Gateway.Apis;

public static class InvoiceApi
{
    public static WebApplication MapInvoiceApi(this WebApplication app)
    {
        app.MapGet(Routes.Invoices.Invoice, GetInvoiceAsync)
            .WithTags("Invoices")
            .WithRequiredQuery("year", "month")
            .RequirePermission(Permission.ReadInvoices)
            .RequireOwner(Permission.ReadInvoices, context => context.HttpContext.GetRouteValue("ownerId") is string owner && Identifiers.IsValid(owner) ? owner : null)
            .WithOperation(
                "GetInvoice",
                "An owner's invoice for a month: deliveries, packages and drone utilization, from the three backends in parallel.",
                StatusCodes.Status502BadGateway, StatusCodes.Status504GatewayTimeout);
        return app;
    }

    /// <summary>
    /// Only for the owner's own callers (its <c>owner</c> claim with the scope) or an application with the
    /// role (403 otherwise, before any backend is called). 200 with the invoice; 400 for a bad owner, year or month; when a backend fails after its retries,
    /// 504 if any backend timed out, else 502 — problem details naming each failed backend in
    /// <c>backends</c>. Never a partial invoice: a wrong total is worse than none.
    /// </summary>
    internal static async Task<Results<Ok<Invoice>, ValidationProblem, ProblemHttpResult>> GetInvoiceAsync(
        string ownerId, string? year, string? month, InvoiceAggregator aggregator, CancellationToken cancellationToken)
    {
        if (Problems.InvalidBillingQuery(ownerId, year, month, out var period) is { } invalid)
        {
            return invalid;
        }

        var result = await aggregator.GetAsync(ownerId, period, cancellationToken);
        if (result.Invoice is { } invoice)
        {
            GatewayTelemetry.InvoiceCount.Add(1, new KeyValuePair<string, object?>("outcome", "ok"));
            return TypedResults.Ok(invoice);
        }

        var timedOut = result.Failures.Any(f => f.Outcome == BackendOutcome.TimedOut);
        GatewayTelemetry.InvoiceCount.Add(1, new KeyValuePair<string, object?>("outcome", timedOut ? "gateway_timeout" : "bad_gateway"));
        var names = string.Join(", ", result.Failures.Select(f => f.Backend));
        return TypedResults.Problem(
            statusCode: timedOut ? StatusCodes.Status504GatewayTimeout : StatusCodes.Status502BadGateway,
            title: $"The invoice could not be assembled: {names} failed",
            detail: string.Join("; ", result.Failures.Select(Describe)),
            extensions: new Dictionary<string, object?>
            {
                ["backends"] = result.Failures.Select(f => new { backend = f.Backend, outcome = f.Outcome.ToString(), statusCode = f.StatusCode, detail = f.Detail }).ToArray(),
            });
    }

    private static string Describe(BackendFailure failure) =>
        $"{failure.Backend}: {failure.Outcome}{(failure.StatusCode is { } status ? $" (HTTP {status})" : string.Empty)}{(failure.Detail is null ? string.Empty : $" - {failure.Detail}")}";
}
