using System.Globalization;
using System.Xml.Linq;
using DroneDelivery.Emulators.ServiceBus.Broker;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Extensions;

namespace DroneDelivery.Emulators.ServiceBus.Administration;

/// <summary>
/// The Service Bus administration API (the one <c>ServiceBusAdministrationClient</c> speaks) on the emulator's HTTP
/// listener: GET, PUT and DELETE of <c>{queue or topic}</c>, <c>{topic}/Subscriptions/{subscription}</c> and
/// <c>…/Rules/{rule}</c>, the lists <c>$Resources/queues</c>, <c>$Resources/topics</c>, <c>{topic}/Subscriptions</c> and
/// <c>…/Rules</c> (with <c>$skip</c> and <c>$top</c>), and <c>$namespaceinfo</c>. A request is the API's when it
/// carries <c>api-version</c>, as both SDKs' requests do, so a queue may be called <c>metrics</c> or <c>health</c>
/// without hiding the emulator's own endpoints. Every request needs a shared access signature signed with the
/// namespace's key, as the rest of the emulator does.
/// </summary>
internal sealed class AdministrationEndpoint(Namespace ns, ServiceBusEmulatorOptions options)
{
    public const string ApiVersionParameter = "api-version";

    /// <summary>What a list answers when the request does not say (the .NET SDK asks for pages of 100).</summary>
    private const int DefaultPageSize = 100;

    private readonly EntityCatalog _catalog = new(ns, options.MaxMessageSizeBytes, options.TimeProvider);

    public static void Map(WebApplication app, Namespace ns, ServiceBusEmulatorOptions options)
    {
        var endpoint = new AdministrationEndpoint(ns, options);
        app.Use((context, next) => context.Request.Query.ContainsKey(ApiVersionParameter) ? endpoint.HandleAsync(context) : next(context));
    }

    public async Task HandleAsync(HttpContext context)
    {
        var request = context.Request;
        var path = (request.Path.Value ?? string.Empty).Trim('/');
        var tracker = $"{ns.Name}:{path}";
        try
        {
            Authorise(request, path);
            var target = AdministrationTarget.Parse(path, request.GetDisplayUrl());
            tracker = target.Tracker(ns.Name);
            var atom = new AtomWriter($"{request.Scheme}://{request.Host}", ApiVersion(request), ns.Name);
            var result = request.Method switch
            {
                "GET" => _catalog.Get(target, atom, Paging(request, "$skip", 0), Paging(request, "$top", DefaultPageSize)),
                "PUT" => _catalog.Put(target, await DescriptionAsync(request).ConfigureAwait(false), request.Headers.IfMatch.Count > 0, atom),
                "DELETE" => _catalog.Delete(target),
                _ => throw new AdministrationException(405, $"The method {request.Method} is not supported: use GET, PUT or DELETE."),
            };
            await WriteAsync(context.Response, result.Status, result.Document).ConfigureAwait(false);
        }
        catch (AdministrationException e)
        {
            context.Response.StatusCode = e.Status;
            context.Response.ContentType = AtomNames.ErrorContentType;
            await context.Response.WriteAsync(e.Body(tracker, options.TimeProvider.GetUtcNow())).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// The service's check: a shared access signature in <c>Authorization</c>, signed with the namespace's key, not
    /// expired, its resource covering the path (the .NET SDK signs for the namespace, the JavaScript SDK for each URL).
    /// </summary>
    private void Authorise(HttpRequest request, string path)
    {
        var header = request.Headers.Authorization.ToString();
        if (header.Length == 0)
        {
            throw AdministrationException.Unauthorized("MissingToken: The authorization header was not found.");
        }

        if (SharedAccessSignature.TryParse(header, out var problem) is not { } token)
        {
            throw AdministrationException.Unauthorized(header.StartsWith("Bearer ", StringComparison.OrdinalIgnoreCase)
                ? "InvalidToken: the emulator validates shared access signatures only; Microsoft Entra ID tokens cannot be validated locally."
                : $"MalformedToken: the authorization header is not a shared access signature: {problem}.");
        }

        if (token.Refusal(options.SharedAccessKeyName, options.SharedAccessKey, options.TimeProvider.GetUtcNow(), path) is { } refusal)
        {
            throw AdministrationException.Unauthorized(refusal);
        }
    }

    /// <summary>The api-version, echoed in the entries' links: any version of the usual shape (the SDKs send 2021-05 or 2017-04).</summary>
    private static string ApiVersion(HttpRequest request)
    {
        var version = request.Query[ApiVersionParameter].ToString();
        return version.Length is > 0 and <= 32 && version.All(c => char.IsAsciiLetterOrDigit(c) || c is '-' or '.')
            ? version
            : throw AdministrationException.BadRequest($"The api-version '{(version.Length > 32 ? version[..32] : version)}' is not valid: use 2021-05.");
    }

    private static int Paging(HttpRequest request, string name, int fallback)
    {
        var text = request.Query[name].ToString();
        if (text.Length == 0)
        {
            return fallback;
        }

        return int.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out var value)
            ? value
            : throw AdministrationException.BadRequest($"The query parameter '{name}' must be a non-negative integer (got '{(text.Length > 20 ? text[..20] : text)}').");
    }

    /// <summary>The PUT body's description, read up to <see cref="DescriptionReader.MaxBodyBytes"/>: a larger body is a 413, never buffered whole.</summary>
    private static async Task<XElement> DescriptionAsync(HttpRequest request)
    {
        if (request.ContentLength > DescriptionReader.MaxBodyBytes)
        {
            throw TooLarge();
        }

        using var body = new MemoryStream();
        var buffer = new byte[16 * 1024];
        int read;
        while ((read = await request.Body.ReadAsync(buffer).ConfigureAwait(false)) > 0)
        {
            if (body.Length + read > DescriptionReader.MaxBodyBytes)
            {
                throw TooLarge();
            }

            body.Write(buffer, 0, read);
        }

        body.Position = 0;
        return DescriptionReader.Description(body);
    }

    private static AdministrationException TooLarge() =>
        new(413, $"SubCode=41300. The request body is larger than {DescriptionReader.MaxBodyBytes} bytes, more than any entity description needs.");

    private static async Task WriteAsync(HttpResponse response, int status, XElement? document)
    {
        response.StatusCode = status;
        if (document is null)
        {
            return;
        }

        response.ContentType = document.Name.LocalName == "feed" ? AtomNames.FeedContentType : AtomNames.EntryContentType;
        await response.WriteAsync(document.ToString(SaveOptions.DisableFormatting)).ConfigureAwait(false);
    }
}
