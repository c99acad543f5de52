using Microsoft.AspNetCore.OpenApi;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.OpenApi;

namespace DroneDelivery.Security.PublicApis;

/// <summary>
/// The OpenAPI document declares the bearer scheme and, on each operation that needs a token, the
/// requirement with the scope and role it accepts (OpenAPI 3.1 lets a non-OAuth scheme list role names).
/// </summary>
internal static class BearerApiDocument
{
    public static void AddBearerApiDocument(this IServiceCollection services) =>
        services.Configure<OpenApiOptions>("v1", options =>
        {
            options.AddDocumentTransformer((document, _, _) =>
            {
                document.Components ??= new OpenApiComponents();
                document.Components.SecuritySchemes ??= new Dictionary<string, IOpenApiSecurityScheme>(StringComparer.Ordinal);
                document.Components.SecuritySchemes[EdgeSecurityExtensions.SecuritySchemeName] = new OpenApiSecurityScheme
                {
                    Type = SecuritySchemeType.Http,
                    Scheme = "bearer",
                    BearerFormat = "JWT",
                    Description = "An access token of the configured issuer (Microsoft Entra ID on AKS) with this API's audience. "
                        + "Delegated access: the 'owner' claim names the owner the caller acts for, and 'scp' holds the operation's scope; "
                        + "application access: 'roles' holds the operation's app role, which acts for every owner.",
                };
                return Task.CompletedTask;
            });
            options.AddOperationTransformer((operation, context, _) =>
            {
                var permission = context.Description.ActionDescriptor.EndpointMetadata.OfType<Permission>().LastOrDefault();
                if (permission is not null && context.Document is { } document)
                {
                    operation.Security =
                    [
                        new OpenApiSecurityRequirement
                        {
                            [new OpenApiSecuritySchemeReference(EdgeSecurityExtensions.SecuritySchemeName, document)] = [permission.Scope, permission.Role],
                        },
                    ];
                }

                return Task.CompletedTask;
            });
        });
}
