using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;
using Microsoft.AspNetCore.Routing.Template;
using Microsoft.Extensions.DependencyInjection;

namespace DroneDelivery.Services.Tests.HttpFiles;

/// <summary>One operation a service maps: its method (<c>*</c>: any) and route pattern.</summary>
public sealed record ServiceRoute(string Service, string Method, string Pattern)
{
    public override string ToString() => $"{Method} {Pattern} ({Service})";
}

/// <summary>
/// The <c>.http</c> files against the services' routes: every route has a request, every request targets a
/// route with its method, on the service its base-address variable names (<c>{{gateway}}</c>), and every
/// variable a request names is defined.
/// </summary>
public static class HttpFileCoverage
{
    /// <summary>Paths every service maps that are not its API: health, metrics, the API document and reference page.</summary>
    private static readonly string[] OperationalPrefixes = ["/health/", "/metrics", "/openapi/", "/scalar"];

    /// <summary>The API routes of a running service, from its endpoint data source: every mapped endpoint but the operational ones.</summary>
    public static IReadOnlyList<ServiceRoute> ApiRoutes(string service, IServiceProvider services) =>
        [.. services.GetRequiredService<EndpointDataSource>().Endpoints
            .OfType<RouteEndpoint>()
            .Select(endpoint => (endpoint, pattern: "/" + (endpoint.RoutePattern.RawText ?? string.Empty).TrimStart('/')))
            .Where(e => !OperationalPrefixes.Any(prefix => e.pattern.StartsWith(prefix, StringComparison.Ordinal)))
            .SelectMany(e => (e.endpoint.Metadata.GetMetadata<IHttpMethodMetadata>()?.HttpMethods ?? ["*"])
                .Select(method => new ServiceRoute(service, method, e.pattern)))
            .Distinct()];

    public static IReadOnlyList<string> Problems(IReadOnlyList<HttpFile> files, IReadOnlyList<ServiceRoute> routes)
    {
        var problems = new List<string>();
        var services = routes.Select(r => r.Service).Distinct(StringComparer.Ordinal).ToList();
        var covered = new HashSet<ServiceRoute>();
        foreach (var file in files)
        {
            problems.AddRange(file.Problems);
            foreach (var request in file.Requests)
            {
                foreach (var name in request.Texts.SelectMany(HttpFile.References).Distinct(StringComparer.Ordinal))
                {
                    if (name != "$timestamp" && !file.Variables.ContainsKey(name))
                    {
                        problems.Add($"{request.Where}: {{{{{name}}}}} names no variable of {file.Path}");
                    }
                }

                var service = services.FirstOrDefault(s => request.Url.StartsWith("{{" + s + "}}/", StringComparison.Ordinal));
                if (service is null)
                {
                    problems.Add($"{request.Where}: the URL '{request.Url}' does not start with a service's address ({string.Join(", ", services.Select(s => "{{" + s + "}}/"))})");
                    continue;
                }

                var url = file.Substitute(request.Url[(service.Length + 5)..], new Dictionary<string, string>(), DateTimeOffset.UnixEpoch, [], request.Where);
                var path = "/" + url.Split('?', 2)[0];
                var onPath = routes.Where(r => r.Service == service && Matches(r.Pattern, path)).ToList();
                var target = onPath.Where(r => r.Method == request.Method || r.Method == "*").ToList();
                if (target.Count > 0)
                {
                    covered.UnionWith(target);
                }
                else if (onPath.Count > 0)
                {
                    problems.Add($"{request.Where}: {service} maps {path} for {string.Join(", ", onPath.Select(r => r.Method))}, not {request.Method}");
                }
                else
                {
                    problems.Add($"{request.Where}: {request.Method} {path} is no route of {service} (its routes: {string.Join("; ", routes.Where(r => r.Service == service))})");
                }
            }
        }

        foreach (var route in routes.Where(r => !covered.Contains(r)))
        {
            problems.Add($"No request of the .http files calls {route}");
        }

        return problems;
    }

    private static bool Matches(string pattern, string path) =>
        new TemplateMatcher(TemplateParser.Parse(pattern.TrimStart('/')), new RouteValueDictionary()).TryMatch(new PathString(path), new RouteValueDictionary());
}
