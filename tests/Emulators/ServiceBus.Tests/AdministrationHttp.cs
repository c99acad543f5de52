using System.Net;
using System.Text;
using System.Xml.Linq;
using DroneDelivery.Emulators.ServiceBus.Broker;

namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>
/// Raw HTTP to the administration API, for what the SDK never sends (malformed bodies, missing or bad signatures, odd
/// paths) and for the exact answers (status, error body) it turns into exceptions. Requests are signed as the .NET SDK
/// signs them: a shared access signature for the namespace (<c>https://host</c>), valid for ten minutes.
/// </summary>
internal sealed class AdministrationHttp(ServiceBusEmulator emulator) : IDisposable
{
    public const string ApiVersion = "api-version=2021-05";

    private readonly HttpClient _http = new() { BaseAddress = emulator.HttpEndpoint, Timeout = TimeSpan.FromSeconds(30) };

    public string Token(string resource = "https://127.0.0.1", string? key = null, TimeSpan? validFor = null) =>
        SharedAccessSignature.Create(resource, emulator.Options.SharedAccessKeyName, key ?? emulator.Options.SharedAccessKey, validFor ?? TimeSpan.FromMinutes(10)).ToString();

    public Task<Answer> GetAsync(string path, string? token = "") => SendAsync(HttpMethod.Get, path, null, token);

    public Task<Answer> PutAsync(string path, string body, bool update = false, string? token = "") => SendAsync(HttpMethod.Put, path, body, token, update);

    public Task<Answer> DeleteAsync(string path, string? token = "") => SendAsync(HttpMethod.Delete, path, null, token);

    /// <summary>
    /// Sends a request; <paramref name="token"/> empty means a valid namespace token, null no Authorization header.
    /// The query is <see cref="ApiVersion"/> unless <paramref name="path"/> has one.
    /// </summary>
    public async Task<Answer> SendAsync(HttpMethod method, string path, string? body, string? token = "", bool update = false)
    {
        using var request = new HttpRequestMessage(method, path.Contains('?', StringComparison.Ordinal) ? path : $"{path}?{ApiVersion}");
        if (token is not null)
        {
            request.Headers.TryAddWithoutValidation("Authorization", token.Length == 0 ? Token() : token);
        }

        if (update)
        {
            request.Headers.TryAddWithoutValidation("If-Match", "*");
        }

        if (body is not null)
        {
            request.Content = new StringContent(body, Encoding.UTF8, "application/atom+xml");
        }

        using var response = await _http.SendAsync(request);
        // HttpClient writes the parsed header back with spaces after ';'; compared as the service sends it, without.
        var type = response.Content.Headers.ContentType?.ToString().Replace(" ", string.Empty, StringComparison.Ordinal) ?? string.Empty;
        return new Answer(response.StatusCode, type, await response.Content.ReadAsStringAsync());
    }

    /// <summary>An Atom entry holding <paramref name="description"/> (an element of the description namespace, as a string).</summary>
    public static string Entry(string description) =>
        $"""<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">{description}</content></entry>""";

    public static string Queue(string settings = "") =>
        Entry($"""<QueueDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">{settings}</QueueDescription>""");

    public void Dispose() => _http.Dispose();

    public sealed record Answer(HttpStatusCode Status, string ContentType, string Body)
    {
        public XElement Xml => XElement.Parse(Body);

        /// <summary>The error body's Detail (the status is also in its Code, checked here).</summary>
        public string Detail
        {
            get
            {
                var error = Xml;
                Assert.Equal("Error", error.Name.LocalName);
                Assert.Equal(((int)Status).ToString(System.Globalization.CultureInfo.InvariantCulture), error.Element("Code")!.Value);
                return error.Element("Detail")!.Value;
            }
        }
    }
}
