using DroneDelivery.Security.Tokens;
using DroneDelivery.Lab.Scenarios;

namespace DroneDelivery.Lab.Tests;

/// <summary>What <c>up</c> hands to a load of your own: the addresses, and a key only you can read that mints accepted tokens.</summary>
public sealed class UpRunnerTests
{
    [Fact]
    public void The_signing_key_file_mints_tokens_the_system_accepts_and_only_its_owner_can_read_it()
    {
        var directory = Directory.CreateTempSubdirectory("lab-up-");
        try
        {
            var issuer = DevelopmentIssuer.Generate("dev-issuer", "dev-audience");

            var file = UpRunner.WriteSigningKey(directory.FullName, issuer);

            if (OperatingSystem.IsWindows())
            {
                Assert.Fail("the lab runs on Linux and macOS");
            }
            else
            {
                Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(file));
            }
            var minted = DevelopmentIssuer.FromKey(File.ReadAllText(file), issuer.Issuer, issuer.Audience);
            Assert.Equal(issuer.SigningKey, minted.SigningKey);
        }
        finally
        {
            directory.Delete(recursive: true);
        }
    }

    [Fact]
    public void The_description_names_each_public_service_a_ready_curl_with_an_owners_token_and_the_dashboard()
    {
        var issuer = DevelopmentIssuer.Generate("dev-issuer", "dev-audience");
        var token = issuer.Issue(DevelopmentCaller.ForOwner(UpRunner.SampleOwner));

        var text = UpRunner.Describe(
            "A4",
            new Dictionary<string, Uri> { ["gateway"] = new("http://127.0.0.1:41001/") },
            new UpAccess("/tmp/lab/signing-key", issuer, token),
            new Uri("http://127.0.0.1:41002/"));

        Assert.Contains("gateway    http://127.0.0.1:41001/   API reference: http://127.0.0.1:41001/scalar/v1", text, StringComparison.Ordinal);
        Assert.Contains("dashboard  http://127.0.0.1:41002/", text, StringComparison.Ordinal);
        Assert.Contains("issuer dev-issuer, audience dev-audience", text, StringComparison.Ordinal);
        Assert.Contains("token --signing-key-file /tmp/lab/signing-key --operator", text, StringComparison.Ordinal);
        Assert.Contains($"curl -H \"Authorization: Bearer {token}\" \"http://127.0.0.1:41001/api/invoices/owner-0000?year=2026&month=1\"", text, StringComparison.Ordinal);
    }

    [Fact]
    public void Without_the_dashboard_or_the_gateway_the_description_names_neither()
    {
        var issuer = DevelopmentIssuer.Generate();

        var text = UpRunner.Describe(
            "B5",
            new Dictionary<string, Uri> { ["ingestion"] = new("http://127.0.0.1:41003/") },
            new UpAccess("/tmp/lab/signing-key", issuer, "t"),
            dashboard: null);

        Assert.Contains("ingestion  http://127.0.0.1:41003/", text, StringComparison.Ordinal);
        Assert.DoesNotContain("dashboard", text, StringComparison.Ordinal);
        Assert.DoesNotContain("curl", text, StringComparison.Ordinal);
    }
}
