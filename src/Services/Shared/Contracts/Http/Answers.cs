using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.HttpResults;

namespace DroneDelivery.Contracts.Http;

/// <summary>The answers of the read handlers the services share: one resource by its id, and an owner's billing month.</summary>
public static class Answers
{
    /// <summary>
    /// 200 with what <paramref name="find"/> finds for <paramref name="id"/>; 400 when the id (the route value
    /// <paramref name="idField"/>) is not an identifier, without looking; 404 naming <paramref name="what"/> when
    /// nothing is found.
    /// </summary>
    public static async Task<Results<Ok<T>, ValidationProblem, ProblemHttpResult>> FoundAsync<T>(
        string idField, string id, string what, Func<string, Task<T?>> find)
        where T : class
    {
        if (Problems.InvalidIdentifier(idField, id) is { } invalid)
        {
            return invalid;
        }

        return await find(id) is { } found ? TypedResults.Ok(found) : Problems.NotFound(what, id);
    }

    /// <summary>
    /// 200 with what <paramref name="read"/> answers for an owner's billing month; 400 listing every bad
    /// parameter of the owner/year/month query, without reading.
    /// </summary>
    public static async Task<Results<Ok<T>, ValidationProblem>> BillingMonthAsync<T>(
        string? ownerId, string? year, string? month, Func<string, BillingPeriod, Task<T>> read)
    {
        if (Problems.InvalidBillingQuery(ownerId, year, month, out var period) is { } invalid)
        {
            return invalid;
        }

        return TypedResults.Ok(await read(ownerId!, period));
    }
}
