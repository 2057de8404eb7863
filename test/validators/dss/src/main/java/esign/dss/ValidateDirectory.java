package esign.dss;

import eu.europa.esig.dss.diagnostic.DiagnosticData;
import eu.europa.esig.dss.diagnostic.TimestampWrapper;
import eu.europa.esig.dss.enumerations.Indication;
import eu.europa.esig.dss.enumerations.SubIndication;
import eu.europa.esig.dss.enumerations.ValidationLevel;
import eu.europa.esig.dss.model.FileDocument;
import eu.europa.esig.dss.model.policy.ValidationPolicy;
import eu.europa.esig.dss.model.x509.CertificateToken;
import eu.europa.esig.dss.simplereport.jaxb.XmlDetails;
import eu.europa.esig.dss.simplereport.jaxb.XmlMessage;
import eu.europa.esig.dss.simplereport.jaxb.XmlSignature;
import eu.europa.esig.dss.simplereport.jaxb.XmlTimestamp;
import eu.europa.esig.dss.simplereport.jaxb.XmlToken;
import eu.europa.esig.dss.spi.validation.CommonCertificateVerifier;
import eu.europa.esig.dss.spi.x509.CommonTrustedCertificateSource;
import eu.europa.esig.dss.validation.SignedDocumentValidator;
import eu.europa.esig.dss.validation.policy.ValidationPolicyLoader;
import eu.europa.esig.dss.validation.reports.Reports;

import java.io.File;
import java.io.FileInputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Validates PDFs with DSS, offline, and prints one JSON object per file (one line each) on stdout.
 *
 * <pre>java -jar dss-validator.jar POLICY.xml ANCHORS.pem [VALIDATION-TIME] FILE-OR-DIRECTORY...</pre>
 *
 * POLICY.xml is a DSS validation policy (constraint.xml format); ANCHORS.pem holds the trusted certificates
 * (PEM, one or more): trusted for signing certificates, time-stamping authorities and revocation signers alike.
 * VALIDATION-TIME is an ISO 8601 date-time (default: now). A directory stands for the *.pdf files in it.
 * Nothing is fetched: no AIA, OCSP or CRL source, so revocation data is what each file carries.
 *
 * Each line: {"file","path","accepted","indication","subIndication","reasons","warnings","signatures":[...]}.
 * "accepted" holds when the file has at least one signature and every signature is TOTAL_PASSED and every
 * time-stamp PASSED. "indication" is the worst of them (a time-stamp's PASSED/FAILED counting as
 * TOTAL_PASSED/TOTAL_FAILED), NO_SIGNATURE when there is none. Exit code 0 whatever the verdicts; 2 on bad usage.
 * With -Ddss.reports=DIR, DSS's simple and detailed reports and diagnostic data are also written there, per file.
 */
public final class ValidateDirectory {

	private ValidateDirectory() {
	}

	public static void main(String[] args) throws Exception {
		if (args.length < 3) {
			System.err.println("usage: dss-validator POLICY.xml ANCHORS.pem [VALIDATION-TIME] FILE-OR-DIRECTORY...");
			System.exit(2);
		}
		PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
		ValidationPolicy policy = ValidationPolicyLoader.fromValidationPolicy(new File(args[0])).create();
		CommonCertificateVerifier verifier = offlineVerifier(new File(args[1]));

		int next = 2;
		Date at = null;
		if (looksLikeTime(args[2])) {
			at = parseTime(args[2]);
			next = 3;
		}
		List<File> files = new ArrayList<>();
		for (String arg : Arrays.copyOfRange(args, next, args.length)) {
			File f = new File(arg);
			if (f.isDirectory()) {
				File[] pdfs = f.listFiles((dir, name) -> name.toLowerCase(Locale.ROOT).endsWith(".pdf"));
				if (pdfs != null) {
					Arrays.sort(pdfs);
					files.addAll(Arrays.asList(pdfs));
				}
			} else {
				files.add(f);
			}
		}
		for (File file : files) {
			out.println(validate(file, policy, verifier, at));
		}
	}

	/** ISO 8601 with an offset (2026-01-01T00:00:00Z), or without one, then UTC. */
	private static Date parseTime(String arg) {
		try {
			return Date.from(OffsetDateTime.parse(arg).toInstant());
		} catch (java.time.format.DateTimeParseException e) {
			return Date.from(java.time.LocalDateTime.parse(arg).toInstant(java.time.ZoneOffset.UTC));
		}
	}

	private static boolean looksLikeTime(String arg) {
		return arg.matches("\\d{4}-\\d{2}-\\d{2}T.*") && !new File(arg).exists();
	}

	/** No online source of any kind; the anchors are trusted for every role. */
	private static CommonCertificateVerifier offlineVerifier(File anchorsPem) throws Exception {
		CommonTrustedCertificateSource trusted = new CommonTrustedCertificateSource();
		CertificateFactory factory = CertificateFactory.getInstance("X.509");
		int count = 0;
		try (InputStream in = new FileInputStream(anchorsPem)) {
			for (Certificate c : factory.generateCertificates(in)) {
				trusted.addCertificate(new CertificateToken((X509Certificate) c));
				count++;
			}
		}
		if (count == 0) {
			throw new IllegalArgumentException("no certificate in " + anchorsPem);
		}
		CommonCertificateVerifier verifier = new CommonCertificateVerifier(true);
		verifier.setTrustedCertSources(trusted);
		verifier.setAIASource(null);
		verifier.setOcspSource(null);
		verifier.setCrlSource(null);
		verifier.setRevocationFallback(false);
		verifier.setCheckRevocationForUntrustedChains(false);
		return verifier;
	}

	private static String validate(File file, ValidationPolicy policy, CommonCertificateVerifier verifier, Date at) {
		Map<String, Object> verdict = new LinkedHashMap<>();
		verdict.put("file", file.getName());
		verdict.put("path", file.getAbsolutePath());
		try {
			SignedDocumentValidator validator = SignedDocumentValidator.fromDocument(new FileDocument(file));
			validator.setCertificateVerifier(verifier);
			validator.setValidationLevel(ValidationLevel.ARCHIVAL_DATA);
			validator.setEnableEtsiValidationReport(false);
			validator.setIncludeSemantics(false);
			validator.setLocale(Locale.ENGLISH);
			if (at != null) {
				validator.setValidationTime(at);
			}
			Reports reports = validator.validateDocument(policy);
			describe(verdict, reports);
			saveReports(file, reports);
		} catch (Exception | LinkageError e) {
			verdict.put("accepted", false);
			verdict.put("indication", "TOTAL_FAILED");
			verdict.put("subIndication", "FORMAT_FAILURE");
			verdict.put("reasons", List.of("DSS could not validate the file: " + e));
			verdict.put("warnings", List.of());
			verdict.put("signatures", List.of());
		}
		return Json.write(verdict);
	}

	/** With -Ddss.reports=DIR, DSS's own reports (simple, detailed, diagnostic data) are kept there as XML, per file. */
	private static void saveReports(File file, Reports reports) throws java.io.IOException {
		String dir = System.getProperty("dss.reports");
		if (dir == null || dir.isEmpty()) {
			return;
		}
		java.nio.file.Path base = java.nio.file.Paths.get(dir);
		java.nio.file.Files.createDirectories(base);
		String name = file.getName();
		java.nio.file.Files.writeString(base.resolve(name + ".simple.xml"), reports.getXmlSimpleReport());
		java.nio.file.Files.writeString(base.resolve(name + ".detailed.xml"), reports.getXmlDetailedReport());
		java.nio.file.Files.writeString(base.resolve(name + ".diagnostic.xml"), reports.getXmlDiagnosticData());
	}

	private static void describe(Map<String, Object> verdict, Reports reports) {
		DiagnosticData diagnostic = reports.getDiagnosticData();
		List<Map<String, Object>> tokens = new ArrayList<>();
		Set<String> seen = new LinkedHashSet<>();
		Set<String> reasons = new LinkedHashSet<>();
		Set<String> warnings = new LinkedHashSet<>();
		int signatures = 0;
		for (XmlToken token : reports.getSimpleReportJaxb().getSignatureOrTimestampOrEvidenceRecord()) {
			if (token instanceof XmlSignature) {
				XmlSignature signature = (XmlSignature) token;
				signatures++;
				add(tokens, seen, reasons, warnings, signature, "signature",
						signature.getSignatureFormat() == null ? null : signature.getSignatureFormat().toString());
				if (signature.getTimestamps() != null) {
					for (XmlTimestamp ts : signature.getTimestamps().getTimestamp()) {
						add(tokens, seen, reasons, warnings, ts, "timestamp", timestampType(diagnostic, ts.getId()));
					}
				}
			} else if (token instanceof XmlTimestamp) {
				add(tokens, seen, reasons, warnings, token, "timestamp", timestampType(diagnostic, token.getId()));
			} else {
				add(tokens, seen, reasons, warnings, token, "evidence-record", null);
			}
		}
		// The worst token decides; a time-stamp's PASSED/FAILED weigh as TOTAL_PASSED/TOTAL_FAILED.
		String indication = signatures == 0 ? "NO_SIGNATURE" : "TOTAL_PASSED";
		String subIndication = null;
		int worst = signatures == 0 ? 3 : 0;
		for (Map<String, Object> t : tokens) {
			String ind = normalized((String) t.get("indication"));
			int rank = rank(ind);
			if (rank > worst) {
				worst = rank;
				indication = ind;
				subIndication = (String) t.get("subIndication");
			}
		}
		verdict.put("accepted", signatures > 0 && worst == 0);
		verdict.put("indication", indication);
		verdict.put("subIndication", subIndication);
		verdict.put("reasons", new ArrayList<>(reasons));
		verdict.put("warnings", new ArrayList<>(warnings));
		verdict.put("signatures", tokens);
	}

	private static void add(List<Map<String, Object>> tokens, Set<String> seen, Set<String> reasons, Set<String> warnings,
			XmlToken token, String kind, String level) {
		if (!seen.add(token.getId())) {
			return;
		}
		Map<String, Object> t = new LinkedHashMap<>();
		t.put("id", token.getId());
		t.put("kind", kind);
		Indication indication = token.getIndication();
		SubIndication subIndication = token.getSubIndication();
		t.put("indication", indication == null ? null : indication.toString());
		t.put("subIndication", subIndication == null ? null : subIndication.toString());
		if (level != null) {
			t.put("level", level);
		}
		List<String> errors = messages(token.getAdESValidationDetails(), true);
		List<String> warns = messages(token.getAdESValidationDetails(), false);
		t.put("errors", errors);
		t.put("warnings", warns);
		tokens.add(t);
		reasons.addAll(errors);
		warnings.addAll(warns);
	}

	private static List<String> messages(XmlDetails details, boolean errors) {
		List<String> result = new ArrayList<>();
		if (details != null) {
			for (XmlMessage m : errors ? details.getError() : details.getWarning()) {
				result.add(m.getValue());
			}
		}
		return result;
	}

	private static String timestampType(DiagnosticData diagnostic, String id) {
		TimestampWrapper ts = diagnostic.getTimestampById(id);
		return ts == null || ts.getType() == null ? null : ts.getType().toString();
	}

	private static String normalized(String indication) {
		if (indication == null) {
			return "INDETERMINATE";
		}
		switch (indication) {
		case "PASSED":
			return "TOTAL_PASSED";
		case "FAILED":
			return "TOTAL_FAILED";
		default:
			return indication;
		}
	}

	private static int rank(String indication) {
		switch (indication) {
		case "TOTAL_PASSED":
			return 0;
		case "INDETERMINATE":
			return 1;
		case "NO_SIGNATURE":
			return 2;
		default:
			return 3; // TOTAL_FAILED, or anything DSS adds later
		}
	}
}
