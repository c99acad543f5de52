using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Polly;
using Polly.CircuitBreaker;
using Polly.Timeout;
using DroneDelivery.Contracts;

namespace DroneDelivery.ServiceClients.Backends;

/// <summary>How a call to a backend ended, after the client's resilience pipeline has done its retries.</summary>
public enum BackendOutcome
{
    /// <summary>2xx.</summary>
    Succeeded,

    /// <summary>404: the resource does not exist.</summary>
    NotFound,

    /// <summary>Any other 4xx except 408 and 429: the request itself is wrong; repeating it cannot help.</summary>
    Rejected,

    /// <summary>5xx, 408, 429, a connection failure or an open circuit: may succeed later.</summary>
    Failed,

    /// <summary>The call's time limit passed.</summary>
    TimedOut,
}

/// <summary>The result of one backend call: the outcome, the status code when there was an answer, the body or the reason.</summary>
public sealed record BackendResult<T>(string Backend, BackendOutcome Outcome, HttpStatusCode? StatusCode, T? Value, string? Detail)
{
    /// <summary>Repeating the call later may succeed.</summary>
    public bool IsTransient => Outcome is BackendOutcome.Failed or BackendOutcome.TimedOut;

    public bool Succeeded => Outcome == BackendOutcome.Succeeded;

    /// <summary>A one-line description for logs, dead-letter descriptions and problem details.</summary>
    public string Describe() =>
        $"{Backend}: {Outcome}{(StatusCode is { } status ? $" (HTTP {(int)status})" : string.Empty)}{(Detail is null ? string.Empty : $" - {Detail}")}";
}

/// <summary>Calls a backend and classifies the outcome, never throwing for a failed call.</summary>
public static class BackendCall
{
    private const int MaxDetailLength = 512;

    /// <summary>Sends <paramref name="body"/> (if any) and reads a <typeparamref name="T"/> from a successful answer.</summary>
    /// <exception cref="OperationCanceledException">Only when <paramref name="cancellationToken"/> is cancelled.</exception>
    public static async Task<BackendResult<T>> SendAsync<T>(
        HttpClient client, string backend, HttpMethod method, string path, object? body, CancellationToken cancellationToken)
    {
        using var request = new HttpRequestMessage(method, path);
        if (body is not null)
        {
            request.Content = JsonContent.Create(body, body.GetType(), options: ContractJson.Options);
        }

        try
        {
            using var response = await client.SendAsync(request, HttpCompletionOption.ResponseContentRead, cancellationToken).ConfigureAwait(false);
            var status = response.StatusCode;
            if (response.IsSuccessStatusCode)
            {
                if (typeof(T) == typeof(NoContent) || status == HttpStatusCode.NoContent)
                {
                    return new BackendResult<T>(backend, BackendOutcome.Succeeded, status, default, null);
                }

                try
                {
                    var value = await response.Content.ReadFromJsonAsync<T>(ContractJson.Options, cancellationToken).ConfigureAwait(false);
                    return new BackendResult<T>(backend, BackendOutcome.Succeeded, status, value, null);
                }
                catch (JsonException e)
                {
                    return new BackendResult<T>(backend, BackendOutcome.Failed, status, default, $"unreadable response body: {e.Message}");
                }
            }

            var detail = await ReadDetailAsync(response, cancellationToken).ConfigureAwait(false);
            var outcome = status switch
            {
                HttpStatusCode.NotFound => BackendOutcome.NotFound,
                HttpStatusCode.RequestTimeout or HttpStatusCode.TooManyRequests => BackendOutcome.Failed,
                HttpStatusCode.GatewayTimeout => BackendOutcome.TimedOut,
                >= HttpStatusCode.InternalServerError => BackendOutcome.Failed,
                _ => BackendOutcome.Rejected,
            };
            return new BackendResult<T>(backend, outcome, status, default, detail);
        }
        catch (TimeoutRejectedException e)
        {
            return new BackendResult<T>(backend, BackendOutcome.TimedOut, null, default, $"no answer within {e.Timeout.TotalMilliseconds:0} ms");
        }
        catch (BrokenCircuitException)
        {
            return new BackendResult<T>(backend, BackendOutcome.Failed, null, default, "circuit open after repeated failures");
        }
        catch (ExecutionRejectedException e)
        {
            return new BackendResult<T>(backend, BackendOutcome.Failed, null, default, e.Message);
        }
        catch (HttpRequestException e)
        {
            return new BackendResult<T>(backend, BackendOutcome.Failed, null, default, $"connection failed: {e.Message}");
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            // HttpClient.Timeout (the back-up limit when the resilience pipeline is disabled).
            return new BackendResult<T>(backend, BackendOutcome.TimedOut, null, default, $"no answer within {client.Timeout.TotalMilliseconds:0} ms");
        }
    }

    /// <summary>The problem details' detail (or title), else the start of the body.</summary>
    private static async Task<string?> ReadDetailAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        var text = await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false);
        if (string.IsNullOrWhiteSpace(text))
        {
            return response.ReasonPhrase;
        }

        try
        {
            using var json = JsonDocument.Parse(text);
            if (json.RootElement.ValueKind == JsonValueKind.Object)
            {
                var parts = new List<string>();
                foreach (var name in (string[])["title", "detail"])
                {
                    if (json.RootElement.TryGetProperty(name, out var value) && value.ValueKind == JsonValueKind.String)
                    {
                        parts.Add(value.GetString()!);
                    }
                }

                if (json.RootElement.TryGetProperty("errors", out var errors) && errors.ValueKind == JsonValueKind.Object)
                {
                    parts.Add(errors.GetRawText());
                }

                if (parts.Count > 0)
                {
                    return Truncate(string.Join(" ", parts));
                }
            }
        }
        catch (JsonException)
        {
            // Not JSON: fall through to the raw text.
        }

        return Truncate(text);
    }

    private static string Truncate(string text) => text.Length <= MaxDetailLength ? text : text[..MaxDetailLength] + "...";
}

/// <summary>The body type of calls whose answer has no body worth reading.</summary>
public sealed record NoContent;
