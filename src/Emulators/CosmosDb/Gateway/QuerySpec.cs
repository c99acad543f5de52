using System.Text.Json;
using DroneDelivery.Emulators.CosmosDb.Protocol;
using DroneDelivery.Emulators.CosmosDb.Query;

namespace DroneDelivery.Emulators.CosmosDb.Gateway;

/// <summary>
/// A query request body: <c>{"query": "...", "parameters": [{"name": "@p", "value": ...}], "resumeFilter": ...}</c>.
/// Parameter values point into the parsed body, so the spec must outlive every use of them (dispose
/// it once the response body is written).
/// </summary>
internal sealed record QuerySpec(PreparedQuery Query, IReadOnlyDictionary<string, QueryValue> Parameters, ResumeFilter? ResumeFilter, JsonDocument? Body = null)
    : IDisposable
{
    public void Dispose() => Body?.Dispose();

    public static QuerySpec Parse(GatewayRequest request)
    {
        JsonDocument body;
        try
        {
            body = JsonInput.Parse(request.Body);
        }
        catch (JsonException e)
        {
            throw new BadRequestException($"The query body is not valid JSON: {e.Message}");
        }

        try
        {
            return Parse(body);
        }
        catch
        {
            body.Dispose();
            throw;
        }
    }

    private static QuerySpec Parse(JsonDocument body)
    {
        var root = body.RootElement;
        if (JsonInput.Problem(root) is { } problem)
        {
            throw new BadRequestException($"The query body cannot be accepted: {problem}.");
        }

        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("query", out var text) || text.ValueKind != JsonValueKind.String)
        {
            throw new BadRequestException("The query body must be a JSON object with a string 'query'.");
        }

        var parameters = new Dictionary<string, QueryValue>(StringComparer.Ordinal);
        if (root.TryGetProperty("parameters", out var list) && list.ValueKind != JsonValueKind.Null)
        {
            if (list.ValueKind != JsonValueKind.Array)
            {
                throw new BadRequestException("The query 'parameters' must be an array.");
            }

            foreach (var parameter in list.EnumerateArray())
            {
                if (parameter.ValueKind != JsonValueKind.Object || !parameter.TryGetProperty("name", out var name)
                    || name.ValueKind != JsonValueKind.String || !name.GetString()!.StartsWith('@'))
                {
                    throw new BadRequestException("Each query parameter needs a 'name' starting with '@'.");
                }

                parameters[name.GetString()!] = parameter.TryGetProperty("value", out var value) ? QueryValue.FromElement(value) : QueryValue.Undefined;
            }
        }

        return new QuerySpec(PreparedQuery.Get(text.GetString()!), parameters, ParseResumeFilter(root), body);
    }

    private static ResumeFilter? ParseResumeFilter(JsonElement root)
    {
        if (!root.TryGetProperty("resumeFilter", out var filter) || filter.ValueKind != JsonValueKind.Object)
        {
            return null;
        }

        if (!filter.TryGetProperty("value", out var values) || values.ValueKind != JsonValueKind.Array || values.GetArrayLength() != 1)
        {
            throw new BadRequestException("resumeFilter.value must be an array with one value per ORDER BY item.");
        }

        var value = values[0];
        var exclude = filter.TryGetProperty("exclude", out var e) && e.ValueKind == JsonValueKind.True;
        return value.ValueKind switch
        {
            // The SDK sends [] for undefined and {type, low, high} hashes for arrays and objects.
            JsonValueKind.Array => new ResumeFilter(QueryValue.Undefined, exclude),
            JsonValueKind.Object => throw new QueryException(
                "The query resumes an ORDER BY over arrays or objects from a continuation token, which this emulator does not support."),
            _ => new ResumeFilter(QueryValue.FromElement(value), exclude),
        };
    }
}
