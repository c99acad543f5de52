using System.Text.Json;
using System.Text.RegularExpressions;
using DroneDelivery.Charts.Tests.Infrastructure;
using DroneDelivery.LocalProcesses;

namespace DroneDelivery.Charts.Tests;

/// <summary>
/// The Ingress exposes the public API and nothing else. Every operation of the services' API documents
/// (docs/api/*.json, which ApiDocumentTests keeps equal to the running services) is tried against the
/// rendered rules with Kubernetes' Prefix matching: the gateway's and Ingestion's operations reach them,
/// and no operation of Delivery, Package or DroneScheduler reaches a service that serves it.
/// </summary>
public sealed partial class IngressRouteTests
{
    private static readonly string[] PublicServices = ["gateway", "ingestion"];
    private static readonly string[] InternalServices = ["delivery", "package", "dronescheduler"];

    private static IReadOnlyList<(string Path, string Service)> Rules()
    {
        var ingress = Chart.Template(Chart.EverythingOn).Get("Ingress", "dronedelivery");
        return [.. ingress.Body.List("spec", "rules")
            .SelectMany(rule => rule.List("http", "paths"))
            .Select(path =>
            {
                Assert.Equal("Prefix", path.Text("pathType"));
                return (path.Text("path")!, path.Text("backend", "service", "name")!);
            })];
    }

    [Fact]
    public void Every_rule_leads_to_a_public_service()
    {
        var rules = Rules();

        Assert.NotEmpty(rules);
        Assert.All(rules, rule => Assert.Contains(rule.Service, PublicServices));
    }

    [Theory]
    [InlineData("gateway")]
    [InlineData("ingestion")]
    public void Every_public_operation_reaches_its_service(string service)
    {
        var rules = Rules();

        foreach (var (path, method) in Operations(service))
        {
            Assert.True(Route(rules, path) == service, $"{method} {path} of {service} is routed to {Route(rules, path) ?? "nothing"}");
        }
    }

    [Theory]
    [InlineData("delivery", "GET /api/deliveries/x-1/status")]
    [InlineData("package", "")]
    [InlineData("dronescheduler", "")]
    public void No_internal_operation_is_reachable_through_the_ingress(string service, string servedByTheEdge)
    {
        var rules = Rules();
        var served = PublicServices.ToDictionary(s => s, s => Operations(s).ToHashSet());
        var answeredAtTheEdge = new List<string>();

        foreach (var (path, method) in Operations(service))
        {
            var target = Route(rules, path);
            Assert.True(target is null || !InternalServices.Contains(target), $"{method} {path} of {service} is routed to {target}");
            // Routed to a public service, a request reaches only what that service serves itself; an
            // operation the service does not have (PUT, PATCH, DELETE of a delivery) is a 404 there.
            if (target is not null && served[target].Contains((path, method)))
            {
                answeredAtTheEdge.Add($"{method} {path}");
            }
        }

        // The one operation both have: the gateway answers a delivery's status itself, to its owner.
        Assert.Equal(servedByTheEdge.Length == 0 ? [] : [servedByTheEdge], answeredAtTheEdge);
    }

    [Fact]
    public void The_check_follows_kubernetes_prefix_matching()
    {
        IReadOnlyList<(string, string)> rules = [("/api/deliveries", "gateway"), ("/api/deliveryrequests", "ingestion")];

        Assert.Equal("gateway", Route(rules, "/api/deliveries/x-1/status"));
        Assert.Equal("gateway", Route(rules, "/api/deliveries"));
        Assert.Equal("ingestion", Route(rules, "/api/deliveryrequests/x-1"));
        Assert.Null(Route(rules, "/api/deliveriesx"));
        Assert.Null(Route(rules, "/api/packages/x-1"));
    }

    /// <summary>Every (concrete path, method) of a service's API document; route values become <c>x-1</c>.</summary>
    private static IEnumerable<(string Path, string Method)> Operations(string service)
    {
        using var document = JsonDocument.Parse(File.ReadAllText(RepositoryLayout.InRepository("docs", "api", service + ".json")));
        foreach (var path in document.RootElement.GetProperty("paths").EnumerateObject())
        {
            foreach (var method in path.Value.EnumerateObject().Where(m => m.Name is "get" or "put" or "post" or "patch" or "delete"))
            {
                yield return (RouteValue().Replace(path.Name, "x-1"), method.Name.ToUpperInvariant());
            }
        }
    }

    /// <summary>The service a request path reaches: the longest Prefix rule matching whole path elements.</summary>
    private static string? Route(IReadOnlyList<(string Path, string Service)> rules, string path) =>
        rules
            .Where(rule => path == rule.Path || path.StartsWith(rule.Path.TrimEnd('/') + "/", StringComparison.Ordinal))
            .OrderByDescending(rule => rule.Path.Length)
            .Select(rule => rule.Service)
            .FirstOrDefault();

    [GeneratedRegex(@"\{[^}]+\}")]
    private static partial Regex RouteValue();
}
