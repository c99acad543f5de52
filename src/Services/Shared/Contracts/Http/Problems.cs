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

    /// <summary>404 naming what was not found.</summary>
    public static ProblemHttpResult NotFound(string what, string id) =>
        TypedResults.Problem(statusCode: StatusCodes.Status404NotFound, title: $"{what} not found", detail: $"There is no {what.ToLowerInvariant()} '{id}'.");

    /// <summary>409: the request contradicts the resource's state.</summary>
    public static ProblemHttpResult Conflict(string title, string detail) =>
        TypedResults.Problem(statusCode: StatusCodes.Status409Conflict, title: title, detail: detail);
}
