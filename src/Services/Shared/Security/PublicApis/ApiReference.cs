using DroneDelivery.ServiceDefaults.Hosting;
using DroneDelivery.ServiceDefaults.Settings;
using Microsoft.AspNetCore.Builder;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Options;
using Scalar.AspNetCore;

namespace DroneDelivery.Security.PublicApis;

/// <summary>
/// Whether a public service describes its API to whoever reaches it (section <c>ApiReference</c>): its
/// OpenAPI document (<c>/openapi/v1.json</c>) and the reference page (<c>/scalar/v1</c>). Both are served in
/// the Development environment, and in any other environment only when <see cref="Enabled"/> is true.
/// </summary>
public sealed class ApiReferenceSettings
{
    /// <summary>Serve the OpenAPI document and the reference page outside Development too. Default false.</summary>
    public bool Enabled { get; set; }
}

/// <summary>
/// The public services' API reference: the OpenAPI document and a Scalar page that renders it, with the
/// document's bearer scheme offered for "Test Request". Both are anonymous and read-only, like the health
/// endpoints; the API itself keeps its own authorization. The page's scripts are embedded in the service
/// (no CDN, no web fonts, no telemetry), so it works on a machine without internet access.
/// </summary>
public static class ApiReference
{
    /// <summary>Where the reference page is served: <c>/scalar/v1</c>; <c>/scalar/</c> shows the same page, <c>/scalar</c> redirects to it.</summary>
    public const string PagePrefix = "/scalar";

    /// <summary>The page of the service's one document (<c>v1</c>).</summary>
    public const string PagePath = PagePrefix + "/v1";

    /// <summary>The <c>ApiReference</c> settings; a public service calls it with its other services.</summary>
    public static WebApplicationBuilder AddApiReference(this WebApplicationBuilder builder)
    {
        builder.AddSettings<ApiReferenceSettings>("ApiReference");
        return builder;
    }

    /// <summary>
    /// Maps the OpenAPI document (<see cref="ApiDocument.MapApiDocument"/>) and the reference page when the
    /// environment is Development or <c>ApiReference:Enabled</c> is true; otherwise neither exists. A public
    /// service calls it after mapping its API, instead of <see cref="ApiDocument.MapApiDocument"/>.
    /// </summary>
    public static WebApplication MapApiReference(this WebApplication app)
    {
        if (!IsServed(app))
        {
            return app;
        }

        app.MapApiDocument();
        app.MapScalarApiReference(PagePrefix, options => options
            .WithTitle($"{app.Environment.ApplicationName} API reference")
            .WithOpenApiRoutePattern(ApiDocument.RoutePattern)
            .AddPreferredSecuritySchemes([EdgeSecurityExtensions.SecuritySchemeName])
            .WithAllowedSecuritySchemes([EdgeSecurityExtensions.SecuritySchemeName])
            .DisableDefaultFonts()
            .DisableTelemetry()
            .DisableAgent()
            .DisableMcp())
            .AllowAnonymous();
        return app;
    }

    private static bool IsServed(WebApplication app)
    {
        if (app.Environment.IsDevelopment())
        {
            return true;
        }

        try
        {
            return app.Services.GetRequiredService<IOptions<ApiReferenceSettings>>().Value.Enabled;
        }
        catch (OptionsValidationException)
        {
            // A bad value (ApiReference:Enabled=yes, a misspelt key) stops the start, naming the setting
            // (exit code 2); until then nothing is mapped.
            return false;
        }
    }
}
