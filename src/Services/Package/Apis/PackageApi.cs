using DroneDelivery.Contracts;
using DroneDelivery.Contracts.Http;
using DroneDelivery.ServiceDefaults.Hosting;
using Microsoft.AspNetCore.Http.HttpResults;

namespace DroneDelivery.Package.Apis;

public static class PackageApi
{
    public static WebApplication MapPackageApi(this WebApplication app)
    {
        var api = app.MapGroup(string.Empty).WithTags("Packages");
        api.MapGet(Routes.Packages.Summary, GetSummaryAsync)
            .WithOperation("GetPackageSummary", "Count and total weight of an owner's packages in a billing month.")
            .WithRequiredQuery("ownerId", "year", "month");
        api.MapPut(Routes.Packages.Item, PutAsync).WithOperation("PutPackage", "Creates a package for a delivery; an identical repeat changes nothing.", StatusCodes.Status409Conflict);
        api.MapGet(Routes.Packages.Item, GetAsync).WithOperation("GetPackage", "A package by id.", StatusCodes.Status404NotFound);
        api.MapDelete(Routes.Packages.Item, DeleteAsync).WithOperation("DeletePackage", "Deletes a package; with deliveryId, only if it belongs to that delivery.", StatusCodes.Status404NotFound, StatusCodes.Status409Conflict);
        return app;
    }

    internal static Task<Results<Ok<PackageSummary>, ValidationProblem>> GetSummaryAsync(
        string? ownerId, string? year, string? month, PackageStore store, CancellationToken cancellationToken) =>
        Answers.BillingMonthAsync(ownerId, year, month, (owner, period) => store.GetSummaryAsync(owner, period, cancellationToken));

    internal static async Task<Results<Created<PackageRecord>, Ok<PackageRecord>, ValidationProblem, ProblemHttpResult>> PutAsync(
        string id, PackageUpsert? upsert, PackageStore store, CancellationToken cancellationToken)
    {
        if (Problems.InvalidRequest("id", id, upsert, "package", (body, e) => body.Validate(e)) is { } invalid)
        {
            return invalid;
        }

        var (result, package) = await store.PutAsync(id, upsert!, cancellationToken);
        return result switch
        {
            PackagePutResult.Created => TypedResults.Created("/" + Routes.Packages.ItemPath(id), package),
            PackagePutResult.Conflict => Problems.Conflict("Package belongs to another delivery", $"Package '{id}' belongs to delivery '{package.DeliveryId}'."),
            _ => TypedResults.Ok(package),
        };
    }

    internal static Task<Results<Ok<PackageRecord>, ValidationProblem, ProblemHttpResult>> GetAsync(string id, PackageStore store, CancellationToken cancellationToken) =>
        Answers.FoundAsync("id", id, "Package", _ => store.GetAsync(id, cancellationToken));

    /// <summary>204, or 404; with <c>?deliveryId=</c> only if the package belongs to that delivery, else 409.</summary>
    internal static async Task<Results<NoContent, ValidationProblem, ProblemHttpResult>> DeleteAsync(
        string id, string? deliveryId, PackageStore store, CancellationToken cancellationToken)
    {
        var errors = new FieldErrors();
        errors.RequireIdentifier("id", id);
        if (deliveryId is not null)
        {
            errors.RequireIdentifier("deliveryId", deliveryId);
        }

        if (!errors.IsEmpty)
        {
            return Problems.Invalid(errors);
        }

        return await store.DeleteAsync(id, deliveryId, cancellationToken) switch
        {
            PackageDeleteResult.Deleted => TypedResults.NoContent(),
            PackageDeleteResult.BelongsToAnotherDelivery => Problems.Conflict("Package belongs to another delivery", $"Package '{id}' does not belong to delivery '{deliveryId}'."),
            _ => Problems.NotFound("Package", id),
        };
    }
}
