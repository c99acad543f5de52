using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.OpenApi;

namespace DroneDelivery.ServiceDefaults.Hosting;

/// <summary>
/// The service's OpenAPI document at <c>GET /openapi/v1.json</c>: read-only, anonymous like the health
/// endpoints, and the same whoever asks — it does not echo the request's host as a server.
/// </summary>
public static class ApiDocument
{
    /// <summary>Where every service with an HTTP API publishes its document.</summary>
    public const string Path = "/openapi/v1.json";

    /// <summary>The route of the documents (one, <c>v1</c>).</summary>
    public const string RoutePattern = "/openapi/{documentName}.json";

    internal static void AddApiDocument(this IServiceCollection services, string serviceName) =>
        services.AddOpenApi(options =>
        {
            options.AddDocumentTransformer((document, _, _) =>
            {
                document.Info.Title = $"Drone Delivery {serviceName}";
                document.Info.Version = "v1";
                document.Servers?.Clear();
                return Task.CompletedTask;
            });

            // The handlers take their bodies as nullable only to answer a missing body with 400 problem
            // details listing it: every body is required.
            options.AddOperationTransformer((operation, _, _) =>
            {
                if (operation.RequestBody is OpenApiRequestBody body)
                {
                    body.Required = true;
                }

                return Task.CompletedTask;
            });
        });

    /// <summary>
    /// Names an endpoint's operation and summarises it in the document, and lists the problem-details
    /// answers it gives beyond those its handler's result types declare.
    /// </summary>
    public static RouteHandlerBuilder WithOperation(this RouteHandlerBuilder builder, string name, string summary, params int[] problemStatuses)
    {
        builder.WithName(name).WithSummary(summary);
        foreach (var status in problemStatuses)
        {
            builder.ProducesProblem(status);
        }

        return builder;
    }

    /// <summary>
    /// Marks query parameters the handler takes as nullable only to answer their absence with 400 problem
    /// details (e.g. a billing month's <c>ownerId</c>, <c>year</c> and <c>month</c>) as required in the document.
    /// </summary>
    public static TBuilder WithRequiredQuery<TBuilder>(this TBuilder builder, params string[] names)
        where TBuilder : IEndpointConventionBuilder =>
        builder.AddOpenApiOperationTransformer((operation, _, _) =>
        {
            foreach (var parameter in operation.Parameters ?? [])
            {
                if (parameter is OpenApiParameter { In: ParameterLocation.Query } query && names.Contains(query.Name, StringComparer.Ordinal))
                {
                    query.Required = true;
                }
            }

            return Task.CompletedTask;
        });

    /// <summary>
    /// Maps <see cref="Path"/>; each internal service that serves an HTTP API calls it after mapping the API
    /// (the public services map it through their API reference, only where that is served).
    /// </summary>
    public static WebApplication MapApiDocument(this WebApplication app)
    {
        app.MapOpenApi(RoutePattern).AllowAnonymous();
        return app;
    }
}
