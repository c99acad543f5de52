using System.Net.Http.Json;
using System.Text.Json;
using DroneDelivery.Contracts;

namespace DroneDelivery.Services.Tests.Infrastructure;

internal static class Http
{
    public static Task<HttpResponseMessage> PutJsonAsync<T>(this HttpClient client, string path, T body) =>
        client.PutAsJsonAsync(path, body, ContractJson.Options);

    public static Task<HttpResponseMessage> PostJsonAsync<T>(this HttpClient client, string path, T body) =>
        client.PostAsJsonAsync(path, body, ContractJson.Options);

    public static Task<HttpResponseMessage> PatchJsonAsync<T>(this HttpClient client, string path, T body) =>
        client.PatchAsJsonAsync(path, body, ContractJson.Options);

    public static Task<HttpResponseMessage> SendRawAsync(this HttpClient client, HttpMethod method, string path, string json) =>
        client.SendAsync(new HttpRequestMessage(method, path) { Content = new StringContent(json, System.Text.Encoding.UTF8, "application/json") });

    /// <summary>
    /// Sends a body the server will refuse by size. <c>Expect: 100-continue</c> lets the server answer
    /// 413 before the body is sent, instead of closing the connection under a client still writing it.
    /// </summary>
    public static Task<HttpResponseMessage> SendOversizedAsync(this HttpClient client, HttpMethod method, string path, string json)
    {
        var request = new HttpRequestMessage(method, path) { Content = new StringContent(json, System.Text.Encoding.UTF8, "application/json") };
        request.Headers.ExpectContinue = true;
        return client.SendAsync(request);
    }

    public static async Task<T> ReadAsync<T>(this HttpResponseMessage response) =>
        (await response.Content.ReadFromJsonAsync<T>(ContractJson.Options))!;

    /// <summary>The problem-details body of an error answer.</summary>
    public static async Task<JsonElement> ProblemAsync(this HttpResponseMessage response)
    {
        Assert.Equal("application/problem+json", response.Content.Headers.ContentType?.MediaType);
        return await response.Content.ReadFromJsonAsync<JsonElement>();
    }

    /// <summary>The field names listed in a validation problem's <c>errors</c>.</summary>
    public static async Task<IReadOnlyList<string>> InvalidFieldsAsync(this HttpResponseMessage response)
    {
        var problem = await response.ProblemAsync();
        return [.. problem.GetProperty("errors").EnumerateObject().Select(p => p.Name).Order(StringComparer.Ordinal)];
    }
}
