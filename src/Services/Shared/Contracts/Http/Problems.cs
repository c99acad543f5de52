using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.HttpResults;

namespace DroneDelivery.Contracts.Http;

/// <summary>The problem-details answers the services give for a client's mistakes.</summary>
public static class Problems
{
    /// <summary>400 listing every invalid or missing field.</summary>
    public static ValidationProblem Invalid(FieldErrors errors) =>
        TypedResults.ValidationProblem(errors.ToDictionary(), title: "The request has invalid or missing fields.");

    /// <summary>400 for one bad field.</summary>
    public static ValidationProblem Invalid(string field, string message)
    {
        var errors = new FieldErrors();
        errors.Add(field, message);
        return Invalid(errors);
    }

    /// <summary>400 for a route or query value that is not an identifier; null when it is one.</summary>
    public static ValidationProblem? InvalidIdentifier(string field, string? value) =>
        Identifiers.IsValid(value) ? null : Invalid(field, $"{field} {Identifiers.Rule}.");

    /// <summary>400 listing what is wrong with a resource's id and the body sent for it; null when both are valid.</summary>
    public static ValidationProblem? InvalidRequest<T>(string idField, string? id, T? body, string what, Action<T, FieldErrors> validate)
        where T : class
    {
        var errors = new FieldErrors();
        errors.RequireIdentifier(idField, id);
        errors.RequireBody(body, what, validate);
        return errors.IsEmpty ? null : Invalid(errors);
    }

    /// <summary>400 listing every bad parameter of an owner/year/month query; null, with the billing period, when all are valid.</summary>
    public static ValidationProblem? InvalidBillingQuery(string? ownerId, string? year, string? month, out BillingPeriod period)
    {
        var errors = new FieldErrors();
        period = BillingPeriod.ParseQuery(errors, ownerId, year, month) ?? default;
        return errors.IsEmpty ? null : Invalid(errors);
    }

    /// <summary>404 naming what was not found.</summary>
    public static ProblemHttpResult NotFound(string what, string id) =>
        TypedResults.Problem(statusCode: StatusCodes.Status404NotFound, title: $"{what} not found", detail: $"There is no {what.ToLowerInvariant()} '{id}'.");

    /// <summary>409: the request contradicts the resource's state.</summary>
    public static ProblemHttpResult Conflict(string title, string detail) =>
        TypedResults.Problem(statusCode: StatusCodes.Status409Conflict, title: title, detail: detail);
}
